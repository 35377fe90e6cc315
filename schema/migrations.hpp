#pragma once
// The catalog schema this binary knows: every schema/NNNN_name.sql, embedded at build time by
// schema/embed_migrations.cmake (which refuses misnumbered files, files with transaction
// control, and files that would break the raw string literal). Applied at start-up by
// catalog/migrator.hpp; rules for writing one are in docs/catalog.md.
//
// Thread: any; the data is static and immutable.
#include <span>
#include <string_view>

namespace vigil::schema {

struct Migration {
  int version;              // NNNN of the file name: 1, 2, 3, ... with no holes
  std::string_view name;    // the file name between "NNNN_" and ".sql", e.g. "catalog"
  std::string_view sql;     // the file's text, run in one transaction; no BEGIN/COMMIT inside
  std::string_view sha256;  // lower-case hex SHA-256 of the file, recorded when applied
};

// Ascending by version; versions are 1..N, contiguous (checked when the build embeds them).
std::span<const Migration> migrations() noexcept;

// N: the schema version this binary creates and expects.
int latest_version() noexcept;

}  // namespace vigil::schema
