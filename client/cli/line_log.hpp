#pragma once
// Several threads saying lines to one log (a camera's video and audio sessions): each says them
// through its own LineLog, which hands every whole line, tagged, to the shared log under a shared
// mutex, so lines never interleave mid-way. The tag goes after a leading "vigil record: "
// ("vigil record: audio: admitted as stream 7 ..."), else in front.
// Thread: one LineLog per thread; the mutex is shared. Errors: none.
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

#include "client/cli/line_buf.hpp"

namespace vigil::client {

class LineLogBuf : public LineBuf {
 public:
  LineLogBuf(std::ostream& target, std::mutex& mu, std::string tag) : target_(target), mu_(mu), tag_(std::move(tag)) {}
  ~LineLogBuf() override {
    if (!pending().empty()) emit(pending(), "");  // a last line without its '\n'
  }

 protected:
  void on_line(std::string& line) override { emit(line, "\n"); }

 private:
  void emit(std::string& line, std::string_view end) {
    constexpr std::string_view kCommand = "vigil record: ";
    if (line.starts_with(kCommand)) {
      line.insert(kCommand.size(), tag_);
    } else {
      line.insert(0, tag_);
    }
    const std::lock_guard lock(mu_);
    target_ << line << end << std::flush;
  }

  std::ostream& target_;
  std::mutex& mu_;
  std::string tag_;
};

class LineLog : public std::ostream {
 public:
  LineLog(std::ostream& target, std::mutex& mu, std::string tag)
      : std::ostream(nullptr), buf_(target, mu, std::move(tag)) {
    rdbuf(&buf_);
  }

 private:
  LineLogBuf buf_;
};

}  // namespace vigil::client
