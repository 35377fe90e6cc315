#include "common/log.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "common/redact.hpp"

namespace vigil::log {
namespace {

std::atomic<Level> g_level{Level::info};

const char* level_name(Level l) {
  switch (l) {
    case Level::debug: return "debug";
    case Level::info: return "info";
    case Level::warn: return "warn";
    case Level::error: return "error";
  }
  return "info";
}

// Quote values that contain spaces, quotes or '=' so a line stays machine-parseable. A URL's
// password never reaches the log, whoever wrote the line (common/redact.hpp).
void append_plain_value(std::string& out, std::string_view v);
void append_value(std::string& out, std::string_view v) {
  if (has_credentials(v)) append_plain_value(out, redact_credentials(v));
  else append_plain_value(out, v);
}

void append_plain_value(std::string& out, std::string_view v) {
  bool quote = v.empty() || v.find_first_of(" \"=\t\n") != std::string_view::npos;
  if (!quote) {
    out.append(v);
    return;
  }
  out.push_back('"');
  for (char c : v) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out.append("\\n");
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace

void set_level(Level level) noexcept { g_level.store(level); }

Level parse_level(std::string_view name) {
  if (name == "debug") return Level::debug;
  if (name == "info") return Level::info;
  if (name == "warn") return Level::warn;
  if (name == "error") return Level::error;
  throw std::invalid_argument("unknown log level '" + std::string(name) + "' (debug, info, warn, error)");
}

void write(Level level, std::string_view msg, std::initializer_list<Field> fields) {
  if (level < g_level.load(std::memory_order_relaxed)) return;
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[32];
  std::size_t len = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(ts + len, sizeof ts - len, ".%03dZ", static_cast<int>(ms));
  std::string line;
  line.reserve(128);
  line.append("ts=").append(ts).append(" level=").append(level_name(level)).append(" msg=");
  append_value(line, msg);
  for (const auto& f : fields) {
    line.push_back(' ');
    line.append(f.key).push_back('=');
    append_value(line, f.value);
  }
  line.push_back('\n');
  // One write per line: lines from different threads never interleave.
  ssize_t off = 0;
  while (off < static_cast<ssize_t>(line.size())) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
    if (n <= 0) break;
    off += n;
  }
}

}  // namespace vigil::log
