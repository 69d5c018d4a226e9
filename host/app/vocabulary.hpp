// The engine's vocabulary as the CLI and the server name it — host/app is the only layer they
// include: capability kinds, decisions and outcomes with their spellings, and the lexical bounds
// of the identifiers they accept. Implemented by host/engine; this header is the one way in from
// above the app.
#ifndef CTX_HOST_APP_VOCABULARY_HPP_
#define CTX_HOST_APP_VOCABULARY_HPP_

#include "host/engine/lexical.hpp"     // IWYU pragma: export
#include "host/engine/vocabulary.hpp"  // IWYU pragma: export

#endif  // CTX_HOST_APP_VOCABULARY_HPP_
