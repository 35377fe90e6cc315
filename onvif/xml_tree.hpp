#pragma once
// A bounded XML reader for the replies of ONVIF devices (SOAP envelopes, WS-Discovery matches):
// expat reads the text into a small tree of elements named by their local names (prefixes
// dropped: devices choose their own). Hostile input is refused, never expanded: any DOCTYPE
// (hence every entity, internal or external), more than XmlLimits::max_bytes of text, nesting
// deeper than max_depth or more than max_elements elements.
// Thread: any. Errors: parse_xml throws XmlError.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::onvif {

struct XmlError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct XmlLimits {
  std::size_t max_bytes = std::size_t{1} << 20;  // a reply of 1 MiB is ~100x a real GetProfiles
  int max_depth = 32;
  std::size_t max_elements = 20000;
};

struct XmlElement {
  std::string name;                                             // local name: "Envelope" for <s:Envelope>
  std::string text;                                             // the character data directly inside, trimmed
  std::vector<std::pair<std::string, std::string>> attributes;  // local names
  std::vector<XmlElement> children;

  // The first child named NAME, or null.
  const XmlElement* child(std::string_view name) const;
  // The first element named NAME below this one (depth first), or null.
  const XmlElement* find(std::string_view name) const;
  // Every element named NAME below this one, in document order.
  std::vector<const XmlElement*> find_all(std::string_view name) const;
  // The attribute's value, or "" when absent.
  std::string_view attribute(std::string_view name) const;
  // The text of the first element named NAME below this one, or "".
  std::string_view text_of(std::string_view name) const;
};

// The document element of TEXT.
XmlElement parse_xml(std::string_view text, const XmlLimits& limits = {});

// TEXT escaped for XML character data or an attribute value.
std::string xml_escape(std::string_view text);

}  // namespace vigil::onvif
