#include "onvif/xml_tree.hpp"

#include <expat.h>

#include <memory>

namespace vigil::onvif {
namespace {

std::string_view local_name(const char* name) {
  std::string_view n(name);
  const auto colon = n.rfind(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

struct Builder {
  const XmlLimits& limits;
  XML_Parser parser;
  XmlElement root;
  bool have_root = false;
  std::vector<XmlElement*> open;  // the path from the root to the element being read
  std::size_t elements = 0;
  std::string error;

  void fail(std::string why) {
    if (error.empty()) error = std::move(why);
    XML_StopParser(parser, XML_FALSE);
  }
};

void on_start(void* data, const char* name, const char** attributes) {
  auto& b = *static_cast<Builder*>(data);
  if (!b.error.empty()) return;
  if (++b.elements > b.limits.max_elements)
    return b.fail("more than " + std::to_string(b.limits.max_elements) + " elements");
  if (static_cast<int>(b.open.size()) >= b.limits.max_depth) {
    return b.fail("nested deeper than " + std::to_string(b.limits.max_depth));
  }
  XmlElement* e = nullptr;
  if (b.open.empty()) {
    // expat itself refuses a second document element.
    b.have_root = true;
    e = &b.root;
  } else {
    // Only the innermost open element's children grow here, so the pointers in `open` (to its
    // ancestors' children) stay valid.
    e = &b.open.back()->children.emplace_back();
  }
  e->name = local_name(name);
  for (int i = 0; attributes[i] != nullptr; i += 2) {
    e->attributes.emplace_back(std::string(local_name(attributes[i])), attributes[i + 1]);
  }
  b.open.push_back(e);
}

void on_end(void* data, const char*) {
  auto& b = *static_cast<Builder*>(data);
  if (!b.error.empty() || b.open.empty()) return;
  b.open.back()->text = trimmed(b.open.back()->text);
  b.open.pop_back();
}

void on_text(void* data, const char* s, int len) {
  auto& b = *static_cast<Builder*>(data);
  if (!b.error.empty() || b.open.empty()) return;
  b.open.back()->text.append(s, static_cast<std::size_t>(len));
}

// Any DOCTYPE is refused before expat reads its declarations: SOAP forbids a DTD (SOAP 1.2
// part 1, 5), and without one there is no entity to expand, external or nested.
void on_doctype(void* data, const char*, const char*, const char*, int) {
  static_cast<Builder*>(data)->fail("a DOCTYPE (refused: no DTDs or entities)");
}

void on_entity(void* data, const char*, int, const char*, int, const char*, const char*, const char*, const char*) {
  static_cast<Builder*>(data)->fail("an entity declaration (refused)");
}

}  // namespace

const XmlElement* XmlElement::child(std::string_view n) const {
  for (const auto& c : children) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

const XmlElement* XmlElement::find(std::string_view n) const {
  for (const auto& c : children) {
    if (c.name == n) return &c;
    if (const auto* below = c.find(n)) return below;
  }
  return nullptr;
}

namespace {
void collect(const XmlElement& e, std::string_view n, std::vector<const XmlElement*>& out) {
  for (const auto& c : e.children) {
    if (c.name == n) out.push_back(&c);
    collect(c, n, out);
  }
}
}  // namespace

std::vector<const XmlElement*> XmlElement::find_all(std::string_view n) const {
  std::vector<const XmlElement*> out;
  collect(*this, n, out);
  return out;
}

std::string_view XmlElement::attribute(std::string_view n) const {
  for (const auto& [k, v] : attributes) {
    if (k == n) return v;
  }
  return {};
}

std::string_view XmlElement::text_of(std::string_view n) const {
  const auto* e = find(n);
  return e == nullptr ? std::string_view{} : std::string_view(e->text);
}

XmlElement parse_xml(std::string_view text, const XmlLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw XmlError("XML of " + std::to_string(text.size()) + " bytes (the limit is " +
                   std::to_string(limits.max_bytes) + ")");
  }
  std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate("UTF-8"), &XML_ParserFree);
  if (!parser) throw XmlError("out of memory for the XML parser");
  Builder b{limits, parser.get(), {}, false, {}, 0, {}};
  XML_SetUserData(parser.get(), &b);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  XML_SetStartDoctypeDeclHandler(parser.get(), on_doctype);
  XML_SetEntityDeclHandler(parser.get(), on_entity);
  XML_SetParamEntityParsing(parser.get(), XML_PARAM_ENTITY_PARSING_NEVER);
  const auto status = XML_Parse(parser.get(), text.data(), static_cast<int>(text.size()), XML_TRUE);
  if (!b.error.empty()) throw XmlError("malformed XML: " + b.error);
  if (status != XML_STATUS_OK) {
    throw XmlError(std::string("malformed XML: ") + XML_ErrorString(XML_GetErrorCode(parser.get())) + " at line " +
                   std::to_string(XML_GetCurrentLineNumber(parser.get())));
  }
  if (!b.have_root) throw XmlError("malformed XML: no element");
  return std::move(b.root);
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace vigil::onvif
