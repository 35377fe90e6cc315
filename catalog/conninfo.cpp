#include "catalog/conninfo.hpp"

namespace vigil::catalog {

std::string with_connect_timeout(const std::string& conninfo, int seconds) {
  if (conninfo.find("connect_timeout") != std::string::npos) return conninfo;
  const std::string setting = "connect_timeout=" + std::to_string(seconds);
  if (conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://")) {
    return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") + setting;
  }
  return conninfo.empty() ? setting : conninfo + " " + setting;
}

}  // namespace vigil::catalog
