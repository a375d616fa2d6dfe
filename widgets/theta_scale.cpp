#include "theta_scale.h"

#include <qcustomplot.h>

namespace organ::widgets {

// Called on the GUI thread only (QCPColorGradient caches its lookup table).
QCPColorGradient& thetaGradient() {
    static QCPColorGradient gradient = [] {
        // Viridis, a perceptually uniform scale that reads in grey and for most colour-blind eyes.
        QCPColorGradient g;
        g.clearColorStops();
        const std::pair<double, QRgb> stops[] = {{0.0, 0x440154},   {0.125, 0x482878}, {0.25, 0x3e4989},
                                                 {0.375, 0x31688e}, {0.5, 0x26828e},   {0.625, 0x1f9e89},
                                                 {0.75, 0x35b779},  {0.875, 0x6ece58}, {1.0, 0xfde725}};
        for (const auto& [position, rgb] : stops) {
            g.setColorStopAt(position, QColor(rgb));
        }
        g.setColorInterpolation(QCPColorGradient::ciRGB);
        g.setNanHandling(QCPColorGradient::nhNanColor);
        g.setNanColor(QColor(0xd9, 0xd9, 0xd9));
        return g;
    }();
    return gradient;
}

QColor thetaColor(double theta) {
    return QColor::fromRgb(thetaGradient().color(theta, QCPRange(kThetaMin, kThetaMax)));
}

QCPColorGradient divergingGradient(const QColor& middle) {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0x21, 0x66, 0xac));
    g.setColorStopAt(0.5, middle);
    g.setColorStopAt(1.0, QColor(0xb2, 0x18, 0x2b));
    // An odd number of levels puts one exactly at the middle: zero is `middle` itself.
    g.setLevelCount(351);
    return g;
}

QColor textColorOn(const QColor& background) {
    return background.lightnessF() > 0.55 ? QColor(Qt::black) : QColor(Qt::white);
}

} // namespace organ::widgets
