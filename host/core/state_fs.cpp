#include "host/core/state_fs.hpp"

#include <cerrno>
#include <cstring>

namespace ctx::core {
namespace {

ErrorCode code_of(int error) noexcept {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return ErrorCode::kResourceExhausted;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

std::string_view to_string(StateFsStep step) noexcept {
  switch (step) {
    case StateFsStep::kCreate:
      return "create";
    case StateFsStep::kWrite:
      return "write";
    case StateFsStep::kSync:
      return "fsync";
    case StateFsStep::kRename:
      return "rename";
    case StateFsStep::kLink:
      return "link";
    case StateFsStep::kSyncDir:
      return "fsync directory";
    case StateFsStep::kSyncFs:
      return "syncfs";
  }
  return "step";
}

StateFsError::StateFsError(StateFsStep step, const std::filesystem::path& path, int error)
    : SystemError(
          std::string(to_string(step)) + " " + path.string() + " failed: " + std::strerror(error),
          code_of(error)),
      step_(step),
      error_(error) {}

StateFsError::StateFsError(const StateFsError& cause, const std::string& message)
    : SystemError(message, cause.code()), step_(cause.step_), error_(cause.error_) {}

void replace_file(StateFs& fs, const std::filesystem::path& file,
                  const std::filesystem::path& stage, std::string_view bytes, const NewFile& how,
                  support::Follow follow) {
  fs.create_file(stage, bytes, how);
  try {
    fs.rename(stage, file);
  } catch (const StateFsError&) {
    fs.remove(stage);
    throw;
  }
  fs.sync_dir(file.parent_path(), follow);
}

}  // namespace ctx::core
