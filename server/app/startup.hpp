#pragma once
// Start-up pieces of vigild that are not services: the data directory's lock, the endpoints file
// tools and tests read, numeric listen addresses, a --profile file, the wire protocol's TLS
// context. Start-up code: throws (ConfigError for a bad flag value, runtime_error otherwise).
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "admission/profile.hpp"

namespace vigil::server {

// An exclusive lock on DIR/vigild.lock held for the object's lifetime: two vigild on one data
// directory would mean two postmasters and two writers on the same volumes.
class DataDirLock {
 public:
  explicit DataDirLock(const std::filesystem::path& dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// DIR/run/endpoints.json tells tools and tests where this vigild listens (ports may be 0 = any);
// written by write(), removed when the object goes (vigild no longer listens).
class EndpointsFile {
 public:
  explicit EndpointsFile(std::filesystem::path data_dir) : dir_(std::move(data_dir)) {}
  ~EndpointsFile();
  EndpointsFile(const EndpointsFile&) = delete;
  EndpointsFile& operator=(const EndpointsFile&) = delete;
  // HTTP_TLS: the HTTP port speaks HTTPS only ("http_tls": true in the file).
  void write(const boost::asio::ip::tcp::endpoint& wire, const boost::asio::ip::tcp::endpoint& http,
             bool http_tls = false);

 private:
  std::filesystem::path dir_;
  bool written_ = false;
};

// HOST must be an IP address ("localhost" is 127.0.0.1); a name is a ConfigError naming FLAG.
boost::asio::ip::tcp::endpoint resolve_numeric(const std::string& host, std::uint16_t port, const char* flag);

// A profile JSON given with --profile; a bad one stops the start with a one-line reason.
admission::DiskProfile load_profile_file(const std::filesystem::path& file);

// TLS 1.2+ with CERT's chain and KEY, for the wire protocol or (FLAG "--http-tls") HTTPS. A file
// that cannot be read, or a key that is not CERT's, stops the start naming FLAG's options.
std::shared_ptr<boost::asio::ssl::context> make_tls_context(const std::filesystem::path& cert,
                                                            const std::filesystem::path& key,
                                                            const std::string& flag = "--tls");

}  // namespace vigil::server
