// The catalog as the CLI and the server reach it — host/app is the only layer they include:
// importing a catalog into a state dir, its sources (add / list / update / remove), and the
// imported catalog's entries. Implemented by the runtime's catalog unit; this header is the one
// way in from above the app.
#ifndef CTX_HOST_APP_CATALOG_HPP_
#define CTX_HOST_APP_CATALOG_HPP_

#include "host/runtime/catalog/catalog.hpp"          // IWYU pragma: export
#include "host/runtime/catalog/catalog_sources.hpp"  // IWYU pragma: export

#endif  // CTX_HOST_APP_CATALOG_HPP_
