#include "tests/support/tls_fixture.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <sstream>

#include "tests/support/vigild_process.hpp"

namespace fs = std::filesystem;

namespace vigil::test {

void make_certificate(const fs::path& dir, const std::string& name) {
  const auto r = run_to_exit("/usr/bin/openssl",
                             {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
                              "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout",
                              (dir / (name + ".key")).string(), "-out", (dir / (name + ".crt")).string()},
                             dir / (name + ".openssl.log"));
  REQUIRE(r.status == 0);
}

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CurlResult curl(const fs::path& dir, const std::vector<std::string>& args, const std::string& url) {
  const auto body = dir / "curl.body", log = dir / "curl.log";
  fs::remove(body);
  fs::remove(log);  // run_to_exit appends
  std::vector<std::string> argv = {"-sS", "--max-time", "20", "-o", body.string(), "-w", "\nHTTP_CODE=%{http_code}\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(url);
  const auto r = run_to_exit("/usr/bin/curl", argv, log);
  CurlResult c;
  c.status = r.status;
  const auto text = read_file(log);
  if (const auto at = text.find("HTTP_CODE="); at != std::string::npos) c.code = text.substr(at + 10, 3);
  c.body = read_file(body);
  return c;
}

}  // namespace vigil::test
