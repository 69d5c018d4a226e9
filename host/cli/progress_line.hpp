// ProgressLine: the one line of a catalog import's progress on a terminal ("ctx: writing objects
// [#####---------------]  25% 20000/80000"), redrawn in place at most every 100 ms and when a
// phase changes or ends; the line is cleared when the ProgressLine is destroyed.
#ifndef CTX_HOST_CLI_PROGRESS_LINE_HPP_
#define CTX_HOST_CLI_PROGRESS_LINE_HPP_

#include <chrono>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "host/app/catalog.hpp"
#include "host/cli/command_options.hpp"

namespace ctx::cli {

class ProgressLine {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Draws on `out` (a terminal); `clock` is the steady clock unless a test gives one.
  explicit ProgressLine(std::ostream& out, Clock clock = {});
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // A catalog phase ("read", "objects", "graph") at `done` of `total` (0: not known yet).
  void update(std::string_view phase, std::size_t done, std::size_t total);
  // What the line shows for that step (no control characters).
  static std::string render(std::string_view phase, std::size_t done, std::size_t total);

 private:
  std::ostream& out_;
  Clock clock_;
  std::string phase_;
  std::chrono::steady_clock::time_point last_draw_{};
  bool drawn_ = false;
};

// The catalog commands' progress on stderr: a ProgressLine's update when `io.err` is the
// process's stderr, that is a terminal, and the output is not --json; otherwise none (an empty
// function: nothing extra is printed into a pipe, a file or a JSON consumer's stream).
// `line` holds the ProgressLine while it is in use.
runtime::CatalogProgress terminal_progress(const CommandIo& io, bool json,
                                           std::unique_ptr<ProgressLine>& line);

}  // namespace ctx::cli

#endif  // CTX_HOST_CLI_PROGRESS_LINE_HPP_
