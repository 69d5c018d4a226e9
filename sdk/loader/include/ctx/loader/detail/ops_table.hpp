// Size-tagged ABI tables: a field exists only when the table's struct_size covers it
// (plugin_abi.h convention 4). Implementation detail of ctx::plugins.
#ifndef CTX_LOADER_DETAIL_OPS_TABLE_HPP_
#define CTX_LOADER_DETAIL_OPS_TABLE_HPP_

#include <cstddef>

// Byte offset just past `field` of the C struct `type`.
#define CTX_TABLE_END(type, field) \
  (offsetof(type, field) + sizeof(static_cast<type*>(nullptr)->field))

// True when the table pointer `table` (of struct type `type`) has `field` within its struct_size.
#define CTX_TABLE_HAS(table, type, field) ((table)->struct_size >= CTX_TABLE_END(type, field))

#endif  // CTX_LOADER_DETAIL_OPS_TABLE_HPP_
