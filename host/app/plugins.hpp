// Plugins as the CLI and the server reach them — host/app is the only layer they include: the
// lock file (`ctx plugin pin|list`, the installation's pins), the plugin errors, and the
// supervised trial load of `ctx plugin check`. Implemented by host/plugins; this header is the
// one way in from above the app (loading a plugin into a port stays app::Installation's).
#ifndef CTX_HOST_APP_PLUGINS_HPP_
#define CTX_HOST_APP_PLUGINS_HPP_

#include <ctx/loader/errors.hpp>            // IWYU pragma: export
#include <ctx/loader/lock_file.hpp>         // IWYU pragma: export
#include <ctx/loader/supervised_child.hpp>  // IWYU pragma: export

#endif  // CTX_HOST_APP_PLUGINS_HPP_
