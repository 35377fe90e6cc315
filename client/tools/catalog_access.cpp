#include "client/tools/catalog_access.hpp"

#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace vigil::client {

std::string catalog_conninfo(const std::string& data, const std::string& db) {
  if (!db.empty()) return db;
  return "host=" + std::filesystem::absolute(std::filesystem::path(data) / "pg" / "run").string() +
         " port=5432 user=vigil dbname=vigil";
}

std::string utc_time(std::int64_t us) {
  const std::time_t t = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return out.str();
}

}  // namespace vigil::client
