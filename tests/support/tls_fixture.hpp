#pragma once
// What the TLS tests use: self-signed certificates made by openssl, and curl as a real HTTPS
// client (its exit code says why a connection was refused: 60 untrusted certificate, 35 failed
// handshake). Errors: Catch2 assertions.
#include <filesystem>
#include <string>
#include <vector>

namespace vigil::test {

// A self-signed certificate for 127.0.0.1 and localhost: DIR/NAME.crt and DIR/NAME.key.
void make_certificate(const std::filesystem::path& dir, const std::string& name);

struct CurlResult {
  int status = -1;   // curl's exit code (0: an HTTP answer came)
  std::string code;  // its HTTP status ("000": none)
  std::string body;
};

// curl -sS ARGS... URL (at most 20 s), its files in DIR.
CurlResult curl(const std::filesystem::path& dir, const std::vector<std::string>& args, const std::string& url);

// The whole of FILE ("" if it cannot be read).
std::string read_file(const std::filesystem::path& file);

}  // namespace vigil::test
