#include "client/cli/av_log_line.hpp"

extern "C" {
#include <libavutil/log.h>
}

namespace vigil::client {

std::optional<std::string> av_log_line(void* avcl, int level, const char* fmt, va_list args) {
  if (level > av_log_get_level()) return std::nullopt;
  char line[1024];
  int print_prefix = 1;
  va_list copy;
  va_copy(copy, args);
  av_log_format_line2(avcl, level, fmt, copy, line, sizeof line, &print_prefix);
  va_end(copy);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) return std::nullopt;
  return text;
}

}  // namespace vigil::client
