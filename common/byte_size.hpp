#pragma once
// Byte sizes as operators type them: "500G", "1.5T", "750MiB", "2GB", "1048576". K, M, G, T, P and
// KiB..PiB are powers of 1024 (what df -h and every volume size here use); KB..PB are powers of
// 1000, as drive vendors write them. Case-insensitive; a plain number is bytes. Thread: pure code.
// Errors: nullopt for anything else (negative, empty, an unknown unit, past 2^63 - 1).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil {

std::optional<std::int64_t> parse_byte_size(std::string_view text);

// "1.5 GiB", "512 MiB", "900 B": three significant digits at most, for messages and tables.
std::string format_byte_size(std::int64_t bytes);

}  // namespace vigil
