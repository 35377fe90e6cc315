// Fuzz target: what an ONVIF camera (or anything on the discovery port) sends `vigil camera
// discover` (onvif): the whole input as XML (xml_tree, expat with no DTD or entities), as
// a WS-Discovery ProbeMatches datagram and as the replies to GetCapabilities, GetProfiles and
// GetStreamUri (soap). Checked: only XmlError / OnvifError escape; a parsed tree keeps its bounds
// (depth, element count); matches and profiles stay within kMaxProbeMatches and kMaxProfiles,
// every match has an address to ask and every profile a token; numbers are never negative.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "onvif/soap.hpp"
#include "onvif/xml_tree.hpp"

namespace {

using namespace vigil::onvif;

void check(bool ok) {
  if (!ok) std::abort();
}

std::size_t count(const XmlElement& e, int depth, int& deepest) {
  if (depth > deepest) deepest = depth;
  std::size_t n = 1;
  for (const auto& c : e.children) n += count(c, depth + 1, deepest);
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const auto doc = parse_xml(input);
    int deepest = 0;
    check(count(doc, 1, deepest) <= XmlLimits{}.max_elements);
    check(deepest <= XmlLimits{}.max_depth);
  } catch (const XmlError&) {}
  try {
    const auto matches = parse_probe_matches(input);
    check(matches.size() <= kMaxProbeMatches);
    for (const auto& m : matches) check(!m.xaddrs.empty());
  } catch (const OnvifError&) {}
  try {
    const auto profiles = parse_profiles(input);
    check(profiles.size() <= kMaxProfiles);
    for (const auto& p : profiles) {
      check(!p.token.empty());
      check(p.width >= 0 && p.height >= 0 && p.bitrate_kbps >= 0 && p.frame_rate >= 0);
    }
  } catch (const OnvifError&) {}
  try {
    check(!parse_stream_uri(input).empty());
  } catch (const OnvifError&) {}
  try {
    check(!parse_media_url(input).empty());
  } catch (const OnvifError&) {}
  return 0;
}
