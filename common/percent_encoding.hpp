#pragma once
// Percent-encoding (RFC 3986 §2.1) of a URL part a program puts together: a query parameter's
// value, a path segment, a user name or password in a URL's userinfo. Every byte but the
// unreserved characters (letters, digits, '-', '.', '_', '~') becomes %XX, so any text arrives
// as typed. Thread: pure code. Errors: none.
#include <string>
#include <string_view>

namespace vigil {

std::string percent_encode(std::string_view text);

}  // namespace vigil
