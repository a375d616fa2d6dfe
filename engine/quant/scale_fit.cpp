#include "quant/scale_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

// Every expression keeps ggml's operand order and float types (a product of a float and an int
// level converts the level first): that is what makes the bytes agree.
namespace organ::detail {
namespace {

int clampLevel(int l, int lo, int hi) {
    return std::max(lo, std::min(hi, l));
}

// The value of largest magnitude, with its sign; nullopt (and L all 0) when every value is
// below kGroupMaxEps in magnitude, a block ggml writes as zeros.
std::optional<float> signedMaxOrZero(int n, const float* x, std::int8_t* L) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, std::int8_t(0));
        return std::nullopt;
    }
    return max;
}

// Moves one level at a time while that raises (Σ w·x·l)² / Σ w·l², at most five passes over the
// values (the refinement of make_q3_quants and make_qp_quants). w = weights[i], or x² when
// weights is null; levels stay within [lo, hi]. `positiveBefore`: make_qp_quants' order of tests,
// Σ w·l² without the value must be positive; make_q3_quants asks it of the sum with the new level.
template <typename Level>
void refineLevels(int n, const float* x, const float* weights, Level* L, float& sumlx, float& suml2, int lo,
                  int hi, bool positiveBefore) {
    for (int attempt = 0; attempt < 5; ++attempt) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = weights != nullptr ? weights[i] : x[i] * x[i];
            float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
            float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
            if (!(slx > 0 && (!positiveBefore || sl2 > 0))) {
                continue;
            }
            const int l = std::clamp(nearestInt(x[i] * sl2 / slx), lo, hi);
            if (l == L[i]) {
                continue;
            }
            slx += w * x[i] * static_cast<float>(l);
            sl2 += w * static_cast<float>(l) * static_cast<float>(l);
            if ((positiveBefore || sl2 > 0) && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = static_cast<Level>(l);
                sumlx = slx;
                suml2 = sl2;
                ++changed;
            }
        }
        if (changed == 0) {
            break;
        }
    }
}

} // namespace

float fitSymmetric(int n, int nmax, const float* x, std::int8_t* L, const float* weights) {
    const std::optional<float> signedMax = signedMaxOrZero(n, x, L);
    if (!signedMax) {
        return 0.0f;
    }
    const float max = *signedMax;
    const auto weightOf = [&](int i) { return weights != nullptr ? weights[i] : x[i] * x[i]; };
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampLevel(nearestInt(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<std::int8_t>(l + nmax);
        const float w = weightOf(i);
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) {
            continue;
        }
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = 0;
        suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampLevel(nearestInt(iscale * x[i]), -nmax, nmax - 1);
            const float w = weightOf(i);
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                L[i] =
                    static_cast<std::int8_t>(nmax + clampLevel(nearestInt(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float fitSymmetricRefined(int n, int nmax, const float* x, std::int8_t* L) {
    const std::optional<float> signedMax = signedMaxOrZero(n, x, L);
    if (!signedMax) {
        return 0.0f;
    }
    const float max = *signedMax;
    const float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampLevel(nearestInt(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<std::int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    refineLevels(n, x, nullptr, L, sumlx, suml2, -nmax, nmax - 1, false);
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<std::int8_t>(L[i] + nmax);
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float fitWithMin(int n, int nmax, const float* x, const float* weights, std::uint8_t* L, float* theMin,
                 std::uint8_t* scratch, float rmin, float rdelta, int nstep, bool useMad) {
    float min = x[0];
    float max = x[0];
    float sumW = weights[0];
    float sumX = sumW * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) {
            min = x[i];
        }
        if (x[i] > max) {
            max = x[i];
        }
        sumW += weights[i];
        sumX += weights[i] * x[i];
    }
    if (min > 0) {
        min = 0;
    }
    if (max == min) {
        std::fill(L, L + n, std::uint8_t(0));
        *theMin = -min;
        return 0.0f;
    }
    const auto error = [useMad](float diff) { return useMad ? std::fabs(diff) : diff * diff; };
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float bestError = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<std::uint8_t>(clampLevel(nearestInt(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * static_cast<float>(L[i]) + min - x[i];
        bestError += weights[i] * error(diff);
    }
    if (nstep < 1) {
        *theMin = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sumL = 0;
        float sumL2 = 0;
        float sumXL = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clampLevel(nearestInt(iscale * (x[i] - min)), 0, nmax);
            scratch[i] = static_cast<std::uint8_t>(l);
            const float w = weights[i];
            const float fl = static_cast<float>(l);
            sumL += w * fl;
            sumL2 += w * fl * fl;
            sumXL += w * fl * x[i];
        }
        const float D = sumW * sumL2 - sumL * sumL;
        if (D > 0) {
            float thisScale = (sumW * sumXL - sumX * sumL) / D;
            float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
            if (thisMin > 0) {
                thisMin = 0;
                thisScale = sumXL / sumL2;
            }
            float curError = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = thisScale * static_cast<float>(scratch[i]) + thisMin - x[i];
                curError += weights[i] * error(diff);
            }
            if (curError < bestError) {
                std::copy(scratch, scratch + n, L);
                bestError = curError;
                scale = thisScale;
                min = thisMin;
            }
        }
    }
    *theMin = -min;
    return scale;
}

float fitPositive(int n, int nmax, const float* x, std::uint8_t* L, const float* weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) {
        max = max > x[i] ? max : x[i];
    }
    if (max < kGroupMaxEps) {
        std::fill(L, L + n, std::uint8_t(0));
        return 0.0f;
    }
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<std::uint8_t>(nearestInt(iscale * x[i]));
    }
    const float scale = 1 / iscale;
    float bestMse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * static_cast<float>(L[i]);
        bestMse += weights[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) {
            continue;
        }
        const float iscaleIs = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
        const float scaleIs = 1 / iscaleIs;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearestInt(iscaleIs * x[i]));
            const float diff = x[i] - scaleIs * static_cast<float>(l);
            mse += weights[i] * diff * diff;
        }
        if (mse < bestMse) {
            bestMse = mse;
            iscale = iscaleIs;
        }
    }
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearestInt(iscale * x[i]));
        L[i] = static_cast<std::uint8_t>(l);
        const float w = weights[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    refineLevels(n, x, weights, L, sumlx, suml2, std::numeric_limits<int>::min(), nmax, true);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

} // namespace organ::detail
