#include "support/bounded_json.h"

#include "support/errors.h"
#include "support/text_format.h"

namespace organ {

nlohmann::json parseBoundedJson(std::string_view text, std::uint64_t maxValues, const std::string& label,
                                const std::string& what) {
    std::uint64_t values = 0;
    const nlohmann::json::parser_callback_t count = [&](int, nlohmann::json::parse_event_t event,
                                                        nlohmann::json&) {
        const bool counted = event == nlohmann::json::parse_event_t::value ||
                             event == nlohmann::json::parse_event_t::object_start ||
                             event == nlohmann::json::parse_event_t::array_start;
        if (counted && ++values > maxValues) {
            throw FormatError(label + ": more than " + groupDigits(maxValues) + " values, more than " + what +
                              " holds");
        }
        return true;
    };
    try {
        return nlohmann::json::parse(text, count);
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
