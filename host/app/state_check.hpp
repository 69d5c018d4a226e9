// `ctx journal verify`'s check of a state dir's stores: the journal replayed stream by stream
// with its whole hash chain checked, then every page of the managed query store and every row
// authenticated under the installation key. A store not created yet is skipped.
#ifndef CTX_HOST_APP_STATE_CHECK_HPP_
#define CTX_HOST_APP_STATE_CHECK_HPP_

#include <filesystem>

namespace ctx::app {

struct StateCheck {
  bool journal = false;  // the journal existed and verified
};

// Errors: the journal's and the query store's verification errors (the first bad record),
// read_installation_key's when the query store exists.
StateCheck verify_state_stores(const std::filesystem::path& state_dir);

}  // namespace ctx::app

#endif  // CTX_HOST_APP_STATE_CHECK_HPP_
