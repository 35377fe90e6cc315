#pragma once
// A streambuf that cuts what is written into lines and hands each whole line to its owner
// (on_line, without the '\n'): the shared part of the CLI's line-tagging logs (LineLog for a
// camera's video and audio sessions, the ingest worker's per-camera logs).
// Thread: one writer. Errors: none.
#include <streambuf>
#include <string>

namespace vigil::client {

class LineBuf : public std::streambuf {
 protected:
  // LINE: one whole line, without its '\n'; the buffer is cleared after the call.
  virtual void on_line(std::string& line) = 0;
  // What was written after the last '\n' (a derived destructor may still hand it on).
  std::string& pending() { return line_; }

  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) put(static_cast<char>(c));
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) put(s[i]);
    return n;
  }

 private:
  void put(char c) {
    if (c != '\n') {
      line_ += c;
      return;
    }
    on_line(line_);
    line_.clear();
  }
  std::string line_;
};

}  // namespace vigil::client
