// The ctx commands ctx prints for a human to paste (consent show / approve / deny), so that each
// works as printed in a fresh shell: the state dir is named (--state DIR, quoted for a POSIX shell
// when it needs quotes) whenever it is not the default one. Pure functions; thread-safe.
#ifndef CTX_HOST_RUNTIME_CONSENT_PRINTED_COMMAND_HPP_
#define CTX_HOST_RUNTIME_CONSENT_PRINTED_COMMAND_HPP_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ctx::runtime {

// `text` as one POSIX shell word: bare when every character is one no shell treats specially
// ([A-Za-z0-9/._+,:@%=-]), else in single quotes with each ' written as '\''.
std::string shell_word(std::string_view text);

// " --state DIR" for `state_dir`, or "" when it is nullopt (the default state dir).
std::string state_argument(const std::optional<std::filesystem::path>& state_dir);

// "ctx consent VERB DIGEST --key FILE" + state_argument(state_dir).
std::string consent_command(std::string_view verb, std::string_view digest,
                            const std::optional<std::filesystem::path>& state_dir);

// The state dir a printed command must name: nullopt when `state_dir` is the one a fresh shell
// of this user finds by default ($HOME/.local/state/ctx, with $XDG_STATE_HOME unset or equal to
// $HOME/.local/state), else `state_dir` itself. `home` and `xdg_state_home` are the printing
// process's $HOME and $XDG_STATE_HOME (nullopt when unset).
std::optional<std::filesystem::path> printed_state_dir(
    const std::filesystem::path& state_dir, const std::optional<std::string>& home,
    const std::optional<std::string>& xdg_state_home);

// printed_state_dir with this process's $HOME and $XDG_STATE_HOME (what a hook runner or server
// decides with: the user's shell started the host that started it).
std::optional<std::filesystem::path> printed_state_dir_of_process(
    const std::filesystem::path& state_dir);

}  // namespace ctx::runtime

#endif  // CTX_HOST_RUNTIME_CONSENT_PRINTED_COMMAND_HPP_
