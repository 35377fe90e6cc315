#include "common/ingest_control.hpp"

#include <charconv>

namespace vigil::ingest {
namespace {

// A field that ends the line: no newline may end it early.
std::string one_line(std::string_view text) {
  std::string s(text);
  for (auto& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// A word: non-empty, no space or control character (names and URLs are checked by the catalog).
bool is_word(std::string_view w) {
  if (w.empty()) return false;
  for (const unsigned char c : w) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

// The next space-separated word of LINE, and LINE advanced past it and one space.
std::string_view take_word(std::string_view& line) {
  const auto sp = line.find(' ');
  const auto word = line.substr(0, sp);
  line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
  return word;
}

std::string with_tail(std::string head, std::string_view tail) {
  if (!tail.empty()) head += " " + one_line(tail);
  return head + "\n";
}

}  // namespace

std::string format(const Start& m) {
  return with_tail("start " + m.name + " " + m.url + " " + std::to_string(m.rate_bps), m.gap_reason);
}
std::string format(const Stop& m) { return "stop " + m.name + "\n"; }
std::string format(const Ended& m) {
  return with_tail("ended " + m.name + " " + std::to_string(m.exit_code), m.reason);
}

std::optional<Command> parse_command(std::string_view line) {
  const auto verb = take_word(line);
  Command c;
  if (verb == "start") {
    Start s;
    s.name = take_word(line);
    s.url = take_word(line);
    const auto rate = take_word(line);
    s.gap_reason = line;
    if (!is_word(s.name) || !is_word(s.url)) return std::nullopt;
    const auto [end, ec] = std::from_chars(rate.data(), rate.data() + rate.size(), s.rate_bps);
    if (rate.empty() || ec != std::errc() || end != rate.data() + rate.size() || s.rate_bps < 0) return std::nullopt;
    c.start = std::move(s);
  } else if (verb == "stop") {
    if (!is_word(line)) return std::nullopt;  // the name, and nothing after it
    c.stop = Stop{std::string(line)};
  } else {
    return std::nullopt;
  }
  return c;
}

std::optional<Ended> parse_ended(std::string_view line) {
  if (take_word(line) != "ended") return std::nullopt;
  Ended e;
  e.name = take_word(line);
  const auto code = take_word(line);
  if (!is_word(e.name)) return std::nullopt;
  const auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), e.exit_code);
  if (ec != std::errc() || end != code.data() + code.size() || code.empty()) return std::nullopt;
  e.reason = line;
  return e;
}

}  // namespace vigil::ingest
