#include "server/formats/acl_xml.h"

#include <boost/property_tree/ptree.hpp>
#include <utility>

#include "server/formats/ascii.h"
#include "server/formats/escape.h"
#include "server/formats/xml_tree.h"
#include "storage/edm_text.h"

namespace cerulean::server {

std::optional<int64_t> ParseSasTime(std::string_view s) {
  if (s.size() == 10) return storage::ParseDateTime(std::string(s) + "T00:00:00Z");
  return storage::ParseDateTime(s);
}

std::optional<ErrorReply> ParseAclXml(std::string_view xml, std::vector<AccessPolicy>* out) {
  out->clear();
  std::string_view trimmed = Trim(xml);
  if (trimmed.empty()) return std::nullopt;
  namespace pt = boost::property_tree;
  pt::ptree tree;
  if (!ReadXmlTree(xml, &tree)) return ErrorReply(AzureError::kInvalidXmlDocument);
  auto root = tree.get_child_optional("SignedIdentifiers");
  if (!root) return ErrorReply(AzureError::kInvalidXmlDocument);
  for (const auto& [name, node] : *root) {
    if (name == "<xmlattr>" || name == "<xmlcomment>") continue;
    if (name != "SignedIdentifier") return ErrorReply(AzureError::kInvalidXmlDocument);
    AccessPolicy p;
    p.id = node.get<std::string>("Id", "");
    if (p.id.empty() || p.id.size() > 64) return ErrorReply(AzureError::kInvalidXmlDocument);
    p.start = std::string(Trim(node.get<std::string>("AccessPolicy.Start", "")));
    p.expiry = std::string(Trim(node.get<std::string>("AccessPolicy.Expiry", "")));
    p.permission = std::string(Trim(node.get<std::string>("AccessPolicy.Permission", "")));
    for (const std::string* date : {&p.start, &p.expiry}) {
      if (!date->empty() && !ParseSasTime(*date))
        return ErrorReply(AzureError::kInvalidXmlDocument);
    }
    for (char c : p.permission) {
      if (std::string_view("raud").find(c) == std::string_view::npos) {
        return ErrorReply(AzureError::kInvalidXmlDocument);
      }
    }
    for (const auto& q : *out) {
      if (q.id == p.id) return ErrorReply(AzureError::kInvalidXmlDocument);
    }
    out->push_back(std::move(p));
    if (out->size() > 5) return ErrorReply(AzureError::kInvalidXmlDocument);
  }
  return std::nullopt;
}

std::string AclToXml(const std::vector<AccessPolicy>& policies) {
  if (policies.empty()) return "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers />";
  std::string out = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>";
  auto date = [](const std::string& s) {
    auto t = ParseSasTime(s);
    if (!t) return s;
    std::string f = storage::FormatDateTime(*t);
    f.pop_back();
    size_t dot = f.find('.');
    if (dot == std::string::npos)
      f += ".0000000";
    else
      f.append(7 - (f.size() - dot - 1), '0');
    return f + "Z";
  };
  for (const auto& p : policies) {
    out += "<SignedIdentifier><Id>";
    AppendXmlText(&out, p.id);
    out += "</Id>";
    // An identifier set without a policy, or with an empty one, is listed
    // without <AccessPolicy>, as Azure lists it.
    if (!p.start.empty() || !p.expiry.empty() || !p.permission.empty()) {
      out += "<AccessPolicy>";
      if (!p.start.empty()) out += "<Start>" + date(p.start) + "</Start>";
      if (!p.expiry.empty()) out += "<Expiry>" + date(p.expiry) + "</Expiry>";
      if (!p.permission.empty()) out += "<Permission>" + p.permission + "</Permission>";
      out += "</AccessPolicy>";
    }
    out += "</SignedIdentifier>";
  }
  out += "</SignedIdentifiers>";
  return out;
}

}  // namespace cerulean::server
