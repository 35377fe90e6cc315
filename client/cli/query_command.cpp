#include "client/cli/query_command.hpp"

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli/vigild_api.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/percent_encoding.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil query",
    "Usage: vigil [--token TOKEN] query [--camera NAME]... [--from TIME] [--to TIME] [--type TYPE]...\n"
    "                                  [--class CLASS]... [--zone X0,Y0,X1,Y1] [--attr KEY:VALUE]...\n"
    "                                  [--min-confidence C] [--limit N] [--json] [--clips DIR]\n"
    "                                  [--data DIR | --http HOST:PORT]\n\n"
    "The events vigild holds (motion, analytics, line crossings, ...), newest first: one line each with\n"
    "its camera, time, type, object class, confidence and clip ([start - 5 s, end + 5 s]; 'recorded' when\n"
    "some video of the camera is in it). TIME is what the HTTP API takes: -1h, -30m, @UNIX_SECONDS,\n"
    "2026-11-26T08:00:00Z (default: the last 24 hours up to now). --type, --class, --camera and --attr\n"
    "repeat (any of the types, any of the classes, every attribute). --zone keeps events whose box\n"
    "touches that rectangle of the frame (0..1, x right, y down; events without a box count as the whole\n"
    "frame). --json prints each event as one JSON line. --clips DIR saves every recorded clip as\n"
    "DIR/EVENT-ID_CAMERA.mp4 (existing files are kept).\n"
    "Needs a viewer or admin token (default: DATA/admin.token).\n",
    "\nExit: 0 events found, 1 failed (no such camera, a clip that could not be saved), 2 usage, 3 vigild\n"
    "unreachable, 4 refused: the token may not view, 5 no event matches.\n"};

constexpr int kMaxLimit = 10'000;  // events per command; the API pages by at most 1000
constexpr int kPageLimit = 1000;

struct Filters {
  std::vector<std::string> cameras, types, classes, attrs;
  std::string from = "-24h", to, zone;
  std::optional<double> min_confidence;
  int limit = 100;
};

std::string events_target(const Filters& f, int page_limit, const std::string& cursor) {
  std::string t = "/api/v1/events?from=" + percent_encode(f.from);
  if (!f.to.empty()) t += "&to=" + percent_encode(f.to);
  for (const auto& c : f.cameras) t += "&camera=" + percent_encode(c);
  for (const auto& c : f.types) t += "&type=" + percent_encode(c);
  for (const auto& c : f.classes) t += "&object_class=" + percent_encode(c);
  for (const auto& c : f.attrs) t += "&attr=" + percent_encode(c);
  if (!f.zone.empty()) t += "&zone=" + percent_encode(f.zone);
  if (f.min_confidence) {
    std::ostringstream c;
    c << *f.min_confidence;
    t += "&min_confidence=" + c.str();
  }
  t += "&limit=" + std::to_string(page_limit);
  if (!cursor.empty()) t += "&cursor=" + percent_encode(cursor);
  return t;
}

std::string text_or(const json::object& o, const char* key, const char* none) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : none;
}

void print_header() {
  std::cout << std::left << std::setw(8) << "ID" << std::setw(16) << "CAMERA" << std::setw(22) << "START"
            << std::setw(9) << "SECONDS" << std::setw(16) << "TYPE" << std::setw(12) << "CLASS" << std::setw(6)
            << "CONF"
            << "CLIP\n";
}

void print_event(const json::object& e) {
  const auto start = e.at("start_us").to_number<std::int64_t>();
  const auto end = e.at("end_us").to_number<std::int64_t>();
  const auto& clip = e.at("clip").as_object();
  std::ostringstream seconds, conf;
  seconds << std::fixed << std::setprecision(1) << static_cast<double>(end - start) / 1e6;
  if (const auto* c = e.if_contains("confidence"); c && !c->is_null()) {
    conf << std::fixed << std::setprecision(2) << c->to_number<double>();
  } else {
    conf << "-";
  }
  std::cout << std::left << std::setw(8) << e.at("id").to_number<std::int64_t>() << std::setw(16)
            << e.at("camera").as_string().c_str() << std::setw(22) << utc_time(start) << std::setw(9) << seconds.str()
            << std::setw(16) << e.at("type").as_string().c_str() << std::setw(12) << text_or(e, "object_class", "-")
            << std::setw(6) << conf.str()
            << (clip.at("recorded").as_bool() ? std::string(clip.at("export_url").as_string()) : "(no video)") << "\n";
}

// Saves E's clip into DIR; false (and why on stderr) if it could not be.
bool save_clip(HttpClient& api, const json::object& e, const fs::path& dir) {
  const auto id = e.at("id").to_number<std::int64_t>();
  const auto path = dir / (std::to_string(id) + "_" + std::string(e.at("camera").as_string()) + ".mp4");
  if (fs::exists(path)) return true;  // a second run keeps what the first saved
  const auto answer = api.request(http::verb::get, std::string(e.at("clip").at("export_url").as_string()));
  if (answer.status != 200) {
    std::cerr << kHelp.command << ": the clip of event " << id << " was not saved: " << error_text(answer.body) << "\n";
    return false;
  }
  const auto part = fs::path(path.string() + ".part");
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out.write(answer.body.data(), static_cast<std::streamsize>(answer.body.size()));
    if (!out.flush()) {
      std::cerr << kHelp.command << ": cannot write " << part.string() << "\n";
      return false;
    }
  }
  fs::rename(part, path);  // a file of that name is a whole clip
  std::cerr << "saved " << path.string() << " (" << answer.body.size() << " bytes)\n";
  return true;
}

}  // namespace

int query_main(const std::string& token, const std::vector<std::string>& args) {
  VigildApiOptions where;
  Filters f;
  bool as_json = false;
  std::string clips;
  po::options_description options("Options");
  add_vigild_api_options(options, where);
  options.add_options()                                                                                         //
      ("camera", po::value(&f.cameras)->value_name("NAME")->composing(), "only this camera; repeatable")        //
      ("from", po::value(&f.from)->value_name("TIME"), "events that end at or after TIME (default -24h)")       //
      ("to", po::value(&f.to)->value_name("TIME"), "events that start at or before TIME (default now)")         //
      ("type", po::value(&f.types)->value_name("TYPE")->composing(), "only this event type; repeatable")        //
      ("class", po::value(&f.classes)->value_name("CLASS")->composing(), "only this object class; repeatable")  //
      ("zone", po::value(&f.zone)->value_name("X0,Y0,X1,Y1"), "only events whose box touches this rectangle")   //
      ("attr", po::value(&f.attrs)->value_name("KEY:VALUE")->composing(), "only events with this attribute")    //
      ("min-confidence", po::value<double>()->value_name("C")->notifier([&](double c) { f.min_confidence = c; }),
       "only events with a confidence of at least C (0..1)")                                           //
      ("limit", po::value(&f.limit)->value_name("N"), "at most N events, newest first (default 100)")  //
      ("json", po::bool_switch(&as_json), "print each event as one JSON line")                         //
      ("clips", po::value(&clips)->value_name("DIR"), "save each recorded clip as DIR/ID_CAMERA.mp4");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 0)) return *rc;
  if (f.limit < 1 || f.limit > kMaxLimit) return usage_error(kHelp, "--limit takes 1 to 10000");
  if (f.min_confidence && !(*f.min_confidence >= 0 && *f.min_confidence <= 1)) {
    return usage_error(kHelp, "--min-confidence takes a number from 0 to 1");
  }
  if (!clips.empty()) {
    std::error_code ec;
    fs::create_directories(clips, ec);
    if (ec) {
      std::cerr << kHelp.command << ": cannot make " << clips << ": " << ec.message() << "\n";
      return exit_code::kFailed;
    }
  }
  try {
    auto api = connect_vigild_api(where, token);
    std::string cursor;
    int shown = 0;
    bool more = false, clips_ok = true;
    if (!as_json) print_header();
    while (shown < f.limit) {
      const int want = std::min(kPageLimit, f.limit - shown);
      const auto answer = api.request(http::verb::get, events_target(f, want, cursor));
      if (answer.status != 200) return exit_for_answer(kHelp.command, answer, "a viewer or admin");
      const auto doc = json::parse(answer.body).as_object();
      for (const auto& v : doc.at("events").as_array()) {
        const auto& e = v.as_object();
        if (as_json) std::cout << json::serialize(e) << "\n";
        else print_event(e);
        if (!clips.empty() && e.at("clip").at("recorded").as_bool()) clips_ok = save_clip(api, e, clips) && clips_ok;
        ++shown;
      }
      const auto& next = doc.at("next");
      more = !next.is_null();
      if (!more) break;
      cursor = std::string(next.as_string());
    }
    if (more) std::cerr << "more events match: raise --limit (now " << f.limit << ") or narrow the range\n";
    if (shown == 0) {
      std::cerr << "no event matches\n";
      return exit_code::kNothing;
    }
    return clips_ok ? exit_code::kOk : exit_code::kFailed;
  } catch (const VigildUnreachable& e) {
    std::cerr << kHelp.command << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
}

}  // namespace vigil::client
