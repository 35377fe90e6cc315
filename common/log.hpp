#pragma once
// Structured logging: one line per event, logfmt style
//   ts=2026-11-22T13:50:01.123Z level=info msg="listening" addr=127.0.0.1:7070
// so operators can grep and machines can parse. Thread-safe; one write(2) per line.
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace vigil::log {

enum class Level { debug = 0, info, warn, error };

// A key with its value already rendered as text.
struct Field {
  std::string_view key;
  std::string value;
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  template <class N>
  requires std::is_arithmetic_v<N> Field(std::string_view k, N v) : key(k), value(std::to_string(v)) {}
};

void set_level(Level level) noexcept;
Level parse_level(std::string_view name);  // throws std::invalid_argument
void write(Level level, std::string_view msg, std::initializer_list<Field> fields = {});

inline void debug(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::debug, m, f); }
inline void info(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::info, m, f); }
inline void warn(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::warn, m, f); }
inline void error(std::string_view m, std::initializer_list<Field> f = {}) { write(Level::error, m, f); }

}  // namespace vigil::log
