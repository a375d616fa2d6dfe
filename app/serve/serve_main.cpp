// organ-serve: the HTTP API (docs/http-api.md). `organ serve` runs this program.
#include "api_server.h"

#include "support/text_safety.h"

#include <QCoreApplication>
#include <QHostAddress>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char* kUsage = R"(usage: organ serve [--listen HOST:PORT] [--root DIR] [--token TOKEN]
                   [--max-body BYTES] [--max-jobs N]
  --listen HOST:PORT  where to listen (default 127.0.0.1:8765; port 0: any free port).
                      An address other than loopback needs a token.
  --root DIR          the folder every request's paths are resolved in (default: the
                      current folder); nothing outside it is read or written.
  --token TOKEN       requests must send "Authorization: Bearer TOKEN" (at least 16
                      characters). ORGAN_SERVE_TOKEN in the environment does the same
                      without showing the token to other users' process lists.
  --max-body BYTES    largest request body (default 1048576)
  --max-jobs N        jobs running at once (default 2)
)";

struct Options {
    QHostAddress address{QHostAddress::LocalHost};
    quint16 port = 8765;
    organ::api::ApiConfig config;
};

[[noreturn]] void usage(const std::string& message) {
    std::cerr << "organ serve: " << organ::escapeText(message) << "\n\n" << kUsage;
    std::exit(2);
}

std::uint64_t number(const std::string& text, const char* name, std::uint64_t max) {
    std::size_t used = 0;
    std::uint64_t value = 0;
    try {
        value = std::stoull(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || text.empty() || text.front() == '-' || value > max) {
        usage(std::string(name) + " needs a number up to " + std::to_string(max) + ", not '" + text + "'");
    }
    return value;
}

Options parse(const std::vector<std::string>& args) {
    Options o;
    o.config.root = ".";
    if (const char* token = std::getenv("ORGAN_SERVE_TOKEN"); token != nullptr) {
        o.config.token = QByteArray(token);
    }
    std::map<std::string, std::string> given; // each option once, as organ's other commands take them
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            std::cout << kUsage;
            std::exit(0);
        }
        if (i + 1 >= args.size()) {
            usage(arg.rfind("--", 0) == 0 ? arg + " needs a value" : "unexpected argument '" + arg + "'");
        }
        const std::string& value = args[++i];
        if (const auto [first, isNew] = given.emplace(arg, value); !isNew) {
            // A token is never echoed.
            usage(arg == "--token" ? arg + " is given twice: give one value"
                                   : arg + " is given twice ('" + first->second + "', then '" + value +
                                         "'): give one value");
        }
        if (arg == "--listen") {
            const std::size_t colon = value.rfind(':');
            if (colon == std::string::npos) {
                usage("--listen needs HOST:PORT, such as 127.0.0.1:8765");
            }
            std::string host = value.substr(0, colon);
            if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
                host = host.substr(1, host.size() - 2);
            }
            if (host == "localhost") {
                host = "127.0.0.1";
            }
            if (!o.address.setAddress(QString::fromStdString(host))) {
                usage("--listen: '" + host + "' is not an IP address");
            }
            o.port = static_cast<quint16>(number(value.substr(colon + 1), "--listen's port", 65535));
        } else if (arg == "--root") {
            o.config.root = value;
        } else if (arg == "--token") {
            o.config.token = QByteArray::fromStdString(value);
        } else if (arg == "--max-body") {
            o.config.maxBody = static_cast<qint64>(number(value, "--max-body", 1u << 30));
        } else if (arg == "--max-jobs") {
            o.config.maxJobs = static_cast<int>(number(value, "--max-jobs", 64));
            if (o.config.maxJobs == 0) {
                usage("--max-jobs needs at least 1");
            }
        } else {
            usage("unknown option '" + arg + "'");
        }
    }
    if (!o.config.token.isEmpty() && o.config.token.size() < 16) {
        usage("the token needs at least 16 characters");
    }
    if (!o.address.isLoopback() && o.config.token.isEmpty()) {
        usage("listening on " + o.address.toString().toStdString() +
              " (not loopback) needs --token: anyone who reaches the port could read and write files in "
              "--root");
    }
    return o;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const Options options = parse(std::vector<std::string>(argv + 1, argv + argc));
    std::unique_ptr<organ::api::ApiServer> server;
    try {
        server = std::make_unique<organ::api::ApiServer>(options.config);
    } catch (const organ::api::ApiError& error) {
        std::cerr << "organ serve: " << organ::escapeText(error.message) << "\n";
        return 1;
    }
    QString error;
    if (!server->listenOn(options.address, options.port, &error)) {
        std::cerr << "organ serve: cannot listen on " << options.address.toString().toStdString() << ":"
                  << options.port << ": " << error.toStdString() << "\n";
        return 1;
    }
    const QString host = options.address.protocol() == QAbstractSocket::IPv6Protocol
                             ? QStringLiteral("[%1]").arg(options.address.toString())
                             : options.address.toString();
    std::cout << "organ serve: listening on http://" << host.toStdString() << ":" << server->port()
              << "/v1/ (root " << organ::escapeText(options.config.root)
              << (options.config.token.isEmpty() ? "" : ", token required") << ")" << std::endl;
    return app.exec();
}
