#include "server/app/admin_token.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <pqxx/pqxx>
#include <system_error>

#include "common/log.hpp"
#include "catalog/token_rows.hpp"

namespace fs = std::filesystem;

namespace vigil::server {
namespace {

std::string read_token(const fs::path& file) {
  std::ifstream in(file);
  std::string token;
  in >> token;
  return token;
}

// Written to a temporary file created 0600, then renamed: the token is never readable by others.
void write_token(const fs::path& file, const std::string& token) {
  const auto tmp = file.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "creating " + tmp);
  const std::string line = token + "\n";
  const bool ok = ::fchmod(fd, 0600) == 0 &&
                  ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) throw std::system_error(err, std::generic_category(), "writing " + tmp);
  fs::rename(tmp, file);
}

}  // namespace

fs::path ensure_admin_token(const std::string& conninfo, const fs::path& data_dir) {
  const auto file = data_dir / kAdminTokenFile;
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  if (const auto old = read_token(file); !old.empty()) {
    const std::int64_t now_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    if (catalog::role_of_token(tx, catalog::token_sha256_hex(old), now_us) == std::optional<std::string>("admin")) {
      ::chmod(file.c_str(), 0600);
      return file;
    }
    log::warn("the admin token file no longer names a valid admin token: writing a new one", {{"file", file.string()}});
  }
  const auto created = catalog::create_token(tx, "admin", "admin token file " + fs::absolute(file).string());
  write_token(file, created.token);
  tx.commit();
  log::info("admin token written (the CLI reads it from there; keep it private)",
            {{"file", fs::absolute(file).string()}, {"token_id", created.id}});
  return file;
}

std::string make_recorder_token(const std::string& conninfo, const std::string& node) {
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  const auto label = std::string(kRecorderTokenLabel) + " on " + node;
  catalog::revoke_tokens_labelled(tx, kRecorderTokenLabel);
  catalog::revoke_tokens_labelled(tx, label);
  auto created = catalog::create_token(tx, "recorder", label);
  tx.commit();
  return created.token;
}

}  // namespace vigil::server
