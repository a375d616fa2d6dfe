#include "support/bounded_json.h"

#include "support/errors.h"
#include "support/text_format.h"

#include <set>
#include <vector>

namespace organ {

nlohmann::json parseBoundedJson(std::string_view text, std::uint64_t maxValues, const std::string& label,
                                const std::string& what) {
    using Event = nlohmann::json::parse_event_t;
    std::uint64_t values = 0;
    // The keys of each object being read, innermost last: a key given twice in one object is
    // refused (nlohmann keeps the last, silently).
    std::vector<std::set<std::string>> keys;
    const nlohmann::json::parser_callback_t count = [&](int depth, Event event, nlohmann::json& parsed) {
        const bool counted =
            event == Event::value || event == Event::object_start || event == Event::array_start;
        if (counted && ++values > maxValues) {
            throw FormatError(label + ": more than " + groupDigits(maxValues) + " values, more than " + what +
                              " holds");
        }
        if (depth > kMaxJsonDepth) {
            throw FormatError(label + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                              " levels, more than " + what + " holds");
        }
        if (event == Event::object_start) {
            keys.emplace_back();
        } else if (event == Event::object_end && !keys.empty()) {
            keys.pop_back();
        } else if (event == Event::key && !keys.empty() &&
                   !keys.back().insert(parsed.get<std::string>()).second) {
            throw FormatError(label + ": the key \"" + parsed.get<std::string>() +
                              "\" is given twice in one object (which one holds?)");
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text, count);
    } catch (const nlohmann::json::out_of_range& e) {
        throw FormatError(label + ": a number out of range: " + e.what());
    } catch (const nlohmann::json::exception& e) {
        throw FormatError(label + ": not JSON: " + e.what());
    }
}

std::uint64_t jsonValueCount(const nlohmann::ordered_json& document) {
    std::uint64_t count = 1;
    if (document.is_structured()) {
        for (const auto& item : document) {
            count += jsonValueCount(item);
        }
    }
    return count;
}

} // namespace organ
