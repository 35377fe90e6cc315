#pragma once
// One of FFmpeg's log messages as a line of text, for the recorders' own av_log callbacks
// (`vigil record` masks passwords in it; an ingest worker also tags it with the camera's name).
// Thread: any (FFmpeg calls its callback from whichever thread logs). Errors: none.
#include <cstdarg>
#include <optional>
#include <string>

namespace vigil::client {

// The message FMT/ARGS of AVCL at LEVEL, formatted as FFmpeg would print it, its trailing
// newlines dropped; nullopt when LEVEL is below what FFmpeg's log level lets through, or empty.
std::optional<std::string> av_log_line(void* avcl, int level, const char* fmt, va_list args);

}  // namespace vigil::client
