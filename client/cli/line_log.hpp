#pragma once
// Several threads saying lines to one log (a camera's video and audio sessions): each says them
// through its own LineLog, which hands every whole line, tagged, to the shared log under a shared
// mutex, so lines never interleave mid-way. The tag goes after a leading "vigil record: "
// ("vigil record: audio: admitted as stream 7 ..."), else in front.
// Thread: one LineLog per thread; the mutex is shared. Errors: none.
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace vigil::client {

class LineLogBuf : public std::streambuf {
 public:
  LineLogBuf(std::ostream& target, std::mutex& mu, std::string tag) : target_(target), mu_(mu), tag_(std::move(tag)) {}
  ~LineLogBuf() override {
    if (!line_.empty()) emit();
  }

 protected:
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
    line_ += c;
    if (c == '\n') emit();
  }
  void emit() {
    constexpr std::string_view kCommand = "vigil record: ";
    if (line_.starts_with(kCommand)) {
      line_.insert(kCommand.size(), tag_);
    } else {
      line_.insert(0, tag_);
    }
    const std::lock_guard lock(mu_);
    target_ << line_ << std::flush;
    line_.clear();
  }

  std::ostream& target_;
  std::mutex& mu_;
  std::string tag_, line_;
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
