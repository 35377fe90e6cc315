#include "bench/seaweedfs_peer.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

namespace vigil::bench {

std::string seaweedfs_binary() {
  if (const char* env = std::getenv("VIGIL_SEAWEEDFS"); env && *env) return env;
  const std::string command = "bash " VIGIL_SOURCE_DIR "/deploy/seaweedfs.sh --path 2>/dev/null";
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen(command.c_str(), "r"), &pclose);
  if (!pipe) return {};
  std::array<char, 512> line{};
  if (!std::fgets(line.data(), line.size(), pipe.get())) return {};
  std::string path(line.data());
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  return path;
}

std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a loopback port");
  }
  socklen_t length = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  ::close(fd);
  return ntohs(addr.sin_port);
}

SeaweedFsPeer::SeaweedFsPeer(const std::string& binary, const std::filesystem::path& dir,
                             archive::Credentials credentials, std::uint16_t s3_port)
    : credentials_(std::move(credentials)), s3_port_(s3_port == 0 ? free_loopback_port() : s3_port) {
  const std::filesystem::path config = dir / "s3.json";
  std::ofstream(config) << R"({"identities":[{"name":"vigil","credentials":[{"accessKey":")" << credentials_.access_key
                        << R"(","secretKey":")" << credentials_.secret_key
                        << R"("}],"actions":["Admin","Read","Write","List","Tagging"]}]})";
  std::filesystem::create_directories(dir / "data");
  auto port = [](std::uint16_t p) { return std::to_string(p); };
  SpawnOptions options;
  options.argv = {binary,
                  "server",
                  "-dir=" + (dir / "data").string(),
                  "-ip=127.0.0.1",
                  "-ip.bind=127.0.0.1",
                  "-master.port=" + port(free_loopback_port()),
                  "-master.port.grpc=" + port(free_loopback_port()),
                  "-volume.port=" + port(free_loopback_port()),
                  "-volume.port.grpc=" + port(free_loopback_port()),
                  "-filer.port=" + port(free_loopback_port()),
                  "-filer.port.grpc=" + port(free_loopback_port()),
                  "-s3",
                  "-s3.port=" + port(s3_port_),
                  "-s3.port.grpc=" + port(free_loopback_port()),
                  "-s3.config=" + config.string(),
                  "-volume.max=0"};
  options.output_file = dir / "weed.log";
  process_ = ChildProcess::spawn(options);
}

SeaweedFsPeer::~SeaweedFsPeer() { process_.terminate(SIGTERM, std::chrono::seconds(10)); }

archive::S3Client SeaweedFsPeer::client() const {
  return archive::S3Client(archive::S3Endpoint{"127.0.0.1", s3_port_, credentials_});
}

bool SeaweedFsPeer::make_bucket(const std::string& bucket, std::chrono::seconds timeout) const {
  const archive::S3Client s3 = client();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    try {
      s3.create_bucket(bucket, /*object_lock=*/true);
      return true;
    } catch (const std::exception&) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace vigil::bench
