#include "cli.h"
#include "support/text_safety.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>

namespace organ::cli {

// The HTTP server needs Qt; the command line does not. `organ serve` hands its arguments to
// organ-serve, installed (and built) beside organ, so that organ itself runs without Qt.
int runServe(const std::vector<std::string>& args) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path server = self.parent_path() / "organ-serve";
    if (ec || !std::filesystem::exists(server, ec)) {
        std::cerr << "organ serve: the HTTP server organ-serve is not installed beside organ ("
                  << escapeText(server.string()) << "); it is built where Qt's HTTP server "
                  << "(Debian qt6-httpserver-dev) is found\n";
        return kExitInvalid;
    }
    std::vector<std::string> owned{server.string()};
    owned.insert(owned.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : owned) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    ::execv(owned.front().c_str(), argv.data());
    std::cerr << "organ serve: cannot run " << escapeText(server.string()) << ": " << std::strerror(errno)
              << "\n";
    return kExitInvalid;
}

} // namespace organ::cli
