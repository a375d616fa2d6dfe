#include "support/byte_reader.h"
#include "support/errors.h"
#include "support/text_format.h"

namespace organ {

void ByteReader::require(std::uint64_t n, std::string_view what) const {
    if (n > remaining()) {
        fail(m_pos, what,
             "needs " + groupDigits(n) + " bytes but the file ends " + groupDigits(remaining()) +
                 " bytes later (file size " + groupDigits(size()) + " bytes)");
    }
}

std::string_view ByteReader::readString(unsigned width, std::string_view what) {
    const std::uint64_t at = m_pos;
    const std::uint64_t length = readLength(width, what);
    if (length > remaining()) {
        fail(at, what,
             "length " + groupDigits(length) + " runs past the end of the file (" + groupDigits(remaining()) +
                 " bytes left of " + groupDigits(size()) + ")");
    }
    std::string_view text(reinterpret_cast<const char*>(m_bytes.data() + m_pos),
                          static_cast<std::size_t>(length));
    m_pos += length;
    return text;
}

void ByteReader::fail(std::uint64_t at, std::string_view what, std::string_view problem) const {
    throw FormatError(m_label + ": " + std::string(what) + " at byte " + groupDigits(at) + ": " +
                      std::string(problem));
}

} // namespace organ
