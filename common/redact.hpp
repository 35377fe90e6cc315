#pragma once
// Credentials out of text meant for people: log lines, error messages, a child's last words.
// A camera URL such as rtsp://admin:secret@10.0.0.7/stream is written as
// rtsp://admin:***@10.0.0.7/stream wherever it appears in the text, so an operator can still
// tell which camera and account it was. Pure functions; any thread.
#include <string>
#include <string_view>

namespace vigil {

// TEXT with the password of every scheme://user:password@host in it replaced by "***".
std::string redact_credentials(std::string_view text);

// Whether TEXT holds a URL password that redact_credentials() would hide (cheap: no copy).
bool has_credentials(std::string_view text) noexcept;

}  // namespace vigil
