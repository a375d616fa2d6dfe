#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>
#include <csignal>
#include <sys/types.h>

namespace organ::testing {

// A program's run as a user sees it: its exit status (-2 when it crashed, -3 when it did not
// finish in time and was killed) and what it printed.
struct CliRun {
    int exitCode = -1;
    QString out;
    QString err;
};

// Runs `program` with `args`, the variables of `extra` added to this process's environment.
inline CliRun runProgram(const QString& program, const QStringList& args,
                         const QProcessEnvironment& extra = QProcessEnvironment(), int timeoutMs = 240000) {
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString& name : extra.keys()) {
        env.insert(name, extra.value(name));
    }
    process.setProcessEnvironment(env);
    process.start(program, args);
    CliRun run;
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished();
        run.exitCode = -3;
        return run;
    }
    run.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    return run;
}

// The organ command line of this build (ORGAN_CLI).
inline CliRun runOrganCli(const QStringList& args, const QProcessEnvironment& extra = QProcessEnvironment()) {
    return runProgram(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")), args, extra);
}

// Runs the organ command line with `args` and stops it with `signal` (SIGTERM, as Ctrl-C would) once
// its stderr says `marker` (or it has ended): what it printed on stderr; `process` tells how it
// ended.
inline QByteArray interruptOrganCliWhen(QProcess& process, const QStringList& args, const QByteArray& marker,
                                        int signal = SIGTERM) {
    process.start(QString::fromLocal8Bit(qgetenv("ORGAN_CLI")), args);
    QByteArray err;
    if (!process.waitForStarted()) {
        return err;
    }
    while (!err.contains(marker) && process.state() == QProcess::Running) {
        process.waitForReadyRead(100);
        err += process.readAllStandardError();
    }
    if (process.state() == QProcess::Running) {
        ::kill(static_cast<pid_t>(process.processId()), signal);
    }
    process.waitForFinished(60000);
    return err + process.readAllStandardError();
}

} // namespace organ::testing
