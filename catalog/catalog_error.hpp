#pragma once
// What a catalog function found wrong with what its caller asked for: a value that breaks a rule
// (a camera name, a URL, a range), a camera that does not exist, a name that is taken. Not a
// failure of the catalog itself (those are pqxx exceptions) and not a bug (anything else).
// A caller that serves clients maps the kind to its own answer (the HTTP API: one table in
// server/net/api_error.hpp); a command-line tool prints what().
// It is a std::invalid_argument, so a caller that only knows "bad input" still catches it.
// Thread: a plain value.
#include <stdexcept>
#include <string>

namespace vigil::catalog {

class CatalogError : public std::invalid_argument {
 public:
  enum class Kind { invalid, not_found, conflict };

  CatalogError(Kind kind, const std::string& message) : std::invalid_argument(message), kind_(kind) {}
  static CatalogError invalid(const std::string& message) { return {Kind::invalid, message}; }
  static CatalogError not_found(const std::string& message) { return {Kind::not_found, message}; }
  static CatalogError conflict(const std::string& message) { return {Kind::conflict, message}; }

  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

}  // namespace vigil::catalog
