#include "client/cli/camera_command.hpp"

#include <boost/json.hpp>
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <charconv>
#include <iomanip>
#include <optional>
#include <iostream>

#include "client/cli/discover_command.hpp"
#include "client/cli/vigild_api.hpp"
#include "common/byte_size.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/percent_encoding.hpp"

namespace http = boost::beast::http;
namespace json = boost::json;
namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil camera",
    "Usage: vigil [--token TOKEN] camera add NAME URL [--substream URL] [--rate MBPS] [--retention-days DAYS]\n"
    "                                    [--retention-size SIZE] [--data DIR | --http HOST:PORT]\n"
    "       vigil [--token TOKEN] camera set NAME [--enable | --disable] [--retention-days DAYS|none]\n"
    "                                    [--retention-size SIZE|none] [--archive-after S|none]\n"
    "                                    [--archive-retention-days DAYS|none] [--data DIR | --http HOST:PORT]\n"
    "       vigil [--token TOKEN] camera list [--data DIR | --http HOST:PORT]\n"
    "       vigil [--token TOKEN] camera remove NAME [--data DIR | --http HOST:PORT]\n"
    "       vigil [--token TOKEN] camera discover [--timeout S] [--probe HOST:PORT] [--user U --password P] [--json]\n"
    "                                    [--add] (ONVIF: vigil camera discover --help)\n\n"
    "Cameras vigild records by pulling them (RTSP over TCP, without decoding): vigild picks up a change\n"
    "within 2 s, restarts a camera that drops with backoff, and records each outage as a gap with its\n"
    "reason. `add` of a camera that exists changes its URLs and enables it again. `remove` stops\n"
    "recording; a camera with recordings stays listed (disabled) until they age out. `set` changes what\n"
    "it says and leaves the rest. Retention: video older than DAYS, and the oldest video past SIZE of the\n"
    "camera's recordings (every stream; 500G, 1.5T, 750MiB: powers of 1024; GB, TB: of 1000), is\n"
    "reclaimed first; evidence-locked video never is. `none` clears a limit (vigild's default applies).\n"
    "Archive (vigild --archive-endpoint): a closed segment is copied S seconds after it closes, stays\n"
    "playable from the archive once reclaimed locally, and its copy is deleted after DAYS (never under\n"
    "an evidence lock); `none` uses vigild's --archive-after / --archive-retention.\n"
    "Goes through vigild's HTTP API (/api/v1/cameras) with an admin token.\n",
    "\nExit: 0 ok, 1 failed (e.g. no such camera), 2 usage (bad name or URL), 3 vigild unreachable,\n"
    "4 refused: the token is not an admin's.\n"};

// What --retention-days and --retention-size say, as the camera API's fields: absent (not given),
// null ("none") or a value.
struct Retention {
  std::optional<json::value> days;
  std::optional<json::value> bytes;
  std::optional<json::value> archive_after_s, archive_days;  // set only
  void into(json::object& body) const {
    if (days) body["retention_days"] = *days;
    if (bytes) body["retention_bytes"] = *bytes;
    if (archive_after_s) body["archive_after_s"] = *archive_after_s;
    if (archive_days) body["archive_retention_days"] = *archive_days;
  }
  bool any() const { return days || bytes || archive_after_s || archive_days; }
};

// TEXT as a whole number in [LOW, HIGH], or "none" (null); nullopt if it is neither.
std::optional<json::value> number_or_none(const std::string& text, int low, int high) {
  if (text == "none") return json::value(nullptr);
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < low || v > high) return std::nullopt;
  return json::value(v);
}

int add_camera(HttpClient& api, const std::string& name, const std::string& url, const std::string& substream,
               double rate_mbps, const Retention& retention) {
  json::object body{{"name", name}, {"url", url}};
  if (!substream.empty()) body["substream_url"] = substream;
  if (rate_mbps > 0) body["declared_rate_bps"] = static_cast<std::int64_t>(rate_mbps * 1e6);
  retention.into(body);
  auto answer = api.request(http::verb::post, "/api/v1/cameras", json::serialize(body));
  if (answer.status == 409) {
    // It exists: what `add` always did then, set its URLs and enable it.
    body.erase("name");
    body["substream_url"] = substream.empty() ? json::value(nullptr) : json::value(substream);
    body["enabled"] = true;
    if (rate_mbps <= 0) body["declared_rate_bps"] = nullptr;
    answer = api.request(http::verb::patch, "/api/v1/cameras/" + percent_encode(name), json::serialize(body));
  }
  if (answer.status != 200 && answer.status != 201) return exit_for_answer(kHelp.command, answer);
  const auto id = json::parse(answer.body).at("id").to_number<std::int64_t>();
  std::cout << "camera " << name << " (id " << id << ") will be recorded from " << url << "\n";
  return exit_code::kOk;
}

int set_camera(HttpClient& api, const std::string& name, std::optional<bool> enabled, const Retention& retention) {
  json::object body;
  if (enabled) body["enabled"] = *enabled;
  retention.into(body);
  const auto answer = api.request(http::verb::patch, "/api/v1/cameras/" + percent_encode(name), json::serialize(body));
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  // What the camera is now, as vigild says it (not as asked).
  const auto camera = json::parse(answer.body).as_object();
  const auto limit = [&](const char* field, auto show) -> std::string {
    const auto* v = camera.if_contains(field);
    return v && !v->is_null() ? show(v->to_number<std::int64_t>()) : std::string("default");
  };
  std::cout << "camera " << name << ": " << (camera.at("enabled").as_bool() ? "enabled" : "disabled") << ", kept "
            << limit("retention_days", [](std::int64_t d) { return std::to_string(d) + " days"; }) << ", at most "
            << limit("retention_bytes", [](std::int64_t b) { return format_byte_size(b); }) << "; archived after "
            << limit("archive_after_s", [](std::int64_t a) { return std::to_string(a) + " s"; }) << ", kept there "
            << limit("archive_retention_days", [](std::int64_t d) { return std::to_string(d) + " days"; }) << "\n";
  return exit_code::kOk;
}

int remove_camera(HttpClient& api, const std::string& name) {
  const auto answer = api.request(http::verb::delete_, "/api/v1/cameras/" + percent_encode(name));
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  std::cout << "camera " << name << " is no longer recorded\n";
  return exit_code::kOk;
}

int list_cameras(HttpClient& api) {
  const auto answer = api.request(http::verb::get, "/api/v1/cameras");
  if (answer.status != 200) return exit_for_answer(kHelp.command, answer);
  std::cout << std::left << std::setw(21) << "NAME" << std::setw(10) << "ENABLED" << std::setw(28) << "LAST STREAM"
            << "URL\n";
  const auto doc = json::parse(answer.body);
  for (const auto& v : doc.at("cameras").as_array()) {
    const auto& c = v.as_object();
    const std::string name(c.at("name").as_string());
    std::string last(c.at("state").as_string());
    if (last == "never recorded") last = "-";
    if (const auto end_us = c.at("last_end_us").to_number<std::int64_t>()) last += " " + utc_time(end_us);
    // The list never carries URLs; a camera's own page does, without credentials.
    std::string url = "(pushed by a recording client)";
    if (c.at("pulled").as_bool()) {
      const auto one = api.request(http::verb::get, "/api/v1/cameras/" + percent_encode(name));
      if (one.status != 200) return exit_for_answer(kHelp.command, one);
      url = json::value_to<std::string>(json::parse(one.body).at("url"));
    }
    // A column wider than its heading still gets a space before the next.
    std::cout << std::setw(20) << name << ' ' << std::setw(9) << (c.at("enabled").as_bool() ? "yes" : "no") << ' '
              << std::setw(27) << last << ' ' << url << "\n";
  }
  return exit_code::kOk;
}

}  // namespace

int camera_main(const std::string& token, const std::vector<std::string>& args) {
  // Discovery has options of its own (client/cli/discover_command).
  if (!args.empty() && args[0] == "discover") return discover_main(token, {args.begin() + 1, args.end()});
  VigildApiOptions where;
  std::string substream;
  double rate_mbps = 0;
  std::string retention_days;
  std::string retention_size;
  std::string archive_after, archive_days;
  bool enable = false;
  bool disable = false;
  po::options_description options("Options");
  add_vigild_api_options(options, where);
  options.add_options()("substream", po::value(&substream)->value_name("URL"),
                        "add: the camera's lower-rate stream (thumbnails, previews)")(
      "rate", po::value(&rate_mbps)->value_name("MBPS"),
      "add: the camera's rate in Mbit/s, declared to admission as given (default: what the camera advertises, "
      "else its first GOP measured, with a margin)")(
      "retention-days", po::value(&retention_days)->value_name("DAYS"),
      "add, set: keep the camera's video this many days at most (1..36500; set: none clears it)")(
      "retention-size", po::value(&retention_size)->value_name("SIZE"),
      "add, set: keep at most this much of the camera's video, e.g. 500G (at least 1MiB; set: none clears it)")(
      "archive-after", po::value(&archive_after)->value_name("S"),
      "set: copy the camera's closed segments to the archive S seconds after they close (0..31536000; none: "
      "vigild's --archive-after)")(
      "archive-retention-days", po::value(&archive_days)->value_name("DAYS"),
      "set: delete the camera's archive copies after DAYS (1..36500; none: vigild's --archive-retention)")(
      "enable", po::bool_switch(&enable), "set: record the camera")("disable", po::bool_switch(&disable),
                                                                    "set: stop recording it, keep it and its video");
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, options, kHelp, &words, 3)) return *rc;
  const std::string verb = words.empty() ? "" : words[0];
  const std::size_t want = verb == "add" ? 3 : verb == "remove" || verb == "set" ? 2 : verb == "list" ? 1 : 0;
  if (want == 0) return usage_error(kHelp, "say add, set, list, remove or discover");
  if (words.size() != want) return usage_error(kHelp, verb + " takes " + std::to_string(want - 1) + " argument(s)");
  if (!substream.empty() && verb != "add") return usage_error(kHelp, "--substream goes with add");
  if (rate_mbps != 0 && (verb != "add" || rate_mbps < 0.064)) {
    return usage_error(kHelp, "--rate goes with add and is at least 0.064 (Mbit/s)");
  }
  Retention retention;
  const bool clearable = verb == "set";
  if (!retention_days.empty()) {
    if (verb != "add" && verb != "set") return usage_error(kHelp, "--retention-days goes with add or set");
    int days = 0;
    const auto [end, ec] = std::from_chars(retention_days.data(), retention_days.data() + retention_days.size(), days);
    if (clearable && retention_days == "none") {
      retention.days = json::value(nullptr);
    } else if (ec != std::errc() || end != retention_days.data() + retention_days.size() || days < 1 || days > 36500) {
      return usage_error(kHelp, "--retention-days is a whole number of days, 1 to 36500" +
                                    std::string(clearable ? ", or none" : "") + " (not '" + retention_days + "')");
    } else {
      retention.days = json::value(days);
    }
  }
  if (!retention_size.empty()) {
    if (verb != "add" && verb != "set") return usage_error(kHelp, "--retention-size goes with add or set");
    if (clearable && retention_size == "none") {
      retention.bytes = json::value(nullptr);
    } else if (const auto bytes = parse_byte_size(retention_size); bytes && *bytes >= (1 << 20)) {
      retention.bytes = json::value(*bytes);
    } else {
      return usage_error(kHelp, "--retention-size is a size of at least 1MiB such as 500G, 1.5T or 750MiB" +
                                    std::string(clearable ? ", or none" : "") + " (not '" + retention_size + "')");
    }
  }
  if (!archive_after.empty() || !archive_days.empty()) {
    if (verb != "set") return usage_error(kHelp, "--archive-after and --archive-retention-days go with set");
    if (!archive_after.empty() && !(retention.archive_after_s = number_or_none(archive_after, 0, 31'536'000))) {
      return usage_error(kHelp, "--archive-after is a whole number of seconds, 0 to 31536000, or none (not '" +
                                    archive_after + "')");
    }
    if (!archive_days.empty() && !(retention.archive_days = number_or_none(archive_days, 1, 36500))) {
      return usage_error(kHelp, "--archive-retention-days is a whole number of days, 1 to 36500, or none (not '" +
                                    archive_days + "')");
    }
  }
  if ((enable || disable) && verb != "set") return usage_error(kHelp, "--enable and --disable go with set");
  if (enable && disable) return usage_error(kHelp, "say --enable or --disable, not both");
  if (verb == "set" && !enable && !disable && !retention.any()) {
    return usage_error(kHelp,
                       "set: say what to change (--enable, --disable, --retention-days, --retention-size, "
                       "--archive-after, --archive-retention-days)");
  }
  try {
    auto api = connect_vigild_api(where, token);
    if (verb == "add") return add_camera(api, words[1], words[2], substream, rate_mbps, retention);
    if (verb == "set") {
      return set_camera(api, words[1], enable || disable ? std::optional<bool>(enable) : std::nullopt, retention);
    }
    if (verb == "remove") return remove_camera(api, words[1]);
    return list_cameras(api);
  } catch (const VigildUnreachable& e) {
    std::cerr << kHelp.command << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
  }
}

}  // namespace vigil::client
