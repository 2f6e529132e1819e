"""Real client libraries' array-API code paths, driven through arrayx arrays.

scikit-learn (``array_api_dispatch=True``), SciPy (``SCIPY_ARRAY_API=1``) and array-api-extra
receive arrayx arrays of one executor; each call's result is compared with the same call on the
NumPy executor (dtype, shape, values: exact for integers and bools, rtol 1e-7 for floats).

SciPy reads ``SCIPY_ARRAY_API`` once, when it is first imported, so this module runs in a process
of its own: ``python -m tests.clients EXECUTOR`` prints one JSON object, call id -> outcome
("ok", or why not).  tests/test_clients.py runs it once per executor.
"""
from __future__ import annotations

import os

os.environ["SCIPY_ARRAY_API"] = "1"  # before anything imports SciPy

import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from typing import Callable, NamedTuple  # noqa: E402

import numpy as np  # noqa: E402


class Call(NamedTuple):
    id: str  # "library:what"
    fn: Callable  # fn(data) -> result; data maps input names to arrayx arrays of the executor


CALLS: list[Call] = []


def call(cid: str, fn: Callable) -> None:
    CALLS.append(Call(cid, fn))


# -- inputs: NumPy arrays, moved to the executor under test --------------------------------------

_rng = np.random.default_rng(20261201)
INPUTS = {
    "X": _rng.normal(size=(40, 5)),
    "X2": _rng.normal(size=(12, 5)),
    "y3": np.arange(40) % 3,
    "y2": (np.arange(40) % 2),
    "y2pred": (np.arange(40) % 5 == 0).astype(np.int64),
    "yr": _rng.normal(size=40),
    "yr2": _rng.normal(size=40),
    "ypos": _rng.uniform(0.5, 3.0, size=40),
    "ypos2": _rng.uniform(0.5, 3.0, size=40),
    "P": _rng.dirichlet(np.ones(3), size=40),
    "prob": _rng.uniform(0.05, 0.95, size=40),
    "s": _rng.normal(size=64),
    "s2": _rng.normal(size=64),
    "k": np.array([0.25, 0.5, 0.25]),
    "u": _rng.uniform(0.05, 0.95, size=30),
    "pos": _rng.uniform(0.5, 5.0, size=30),
    "v": _rng.normal(size=30),
    "M": _rng.normal(size=(6, 8)),
    "Xpos": _rng.uniform(0.1, 2.0, size=(20, 4)),
    "lab": np.array([3, 1, 2, 3, 1, 7, 2, 3]),
    "lab2": np.array([1, 5, 9]),
    "nanv": np.array([1.0, np.nan, 3.0, -2.0, np.nan, 0.5]),
    "nanM": np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 1.0]]),
    "img": _rng.normal(size=(8, 8)),
    "obs": np.array([16.0, 18.0, 16.0, 14.0, 12.0, 12.0]),
    "grid": np.linspace(0.0, 2.0, 21),
}


# -- scikit-learn -------------------------------------------------------------------------------

def _sklearn_calls() -> None:
    from sklearn import decomposition as dec
    from sklearn import discriminant_analysis as da
    from sklearn import kernel_approximation as ka
    from sklearn import linear_model as lm
    from sklearn import metrics as m
    from sklearn import mixture, naive_bayes
    from sklearn import model_selection as ms
    from sklearn import preprocessing as pp
    from sklearn.metrics import pairwise as pw
    from sklearn.utils import extmath

    def lda(**kw):
        return lambda d: da.LinearDiscriminantAnalysis(**kw).fit(d["X"], d["y3"])

    for solver in ("svd", "eigen"):
        call(f"sklearn:LDA({solver}).predict", lambda d, s=solver: lda(solver=s)(d).predict(d["X2"]))
        call(f"sklearn:LDA({solver}).predict_proba", lambda d, s=solver: lda(solver=s)(d).predict_proba(d["X2"]))
        call(f"sklearn:LDA({solver}).decision_function", lambda d, s=solver: lda(solver=s)(d).decision_function(d["X2"]))
        call(f"sklearn:LDA({solver}).score", lambda d, s=solver: lda(solver=s)(d).score(d["X"], d["y3"]))
    call("sklearn:LDA(svd).transform", lambda d: lda(n_components=2)(d).transform(d["X2"]))
    call("sklearn:LDA(eigen,shrinkage).predict", lambda d: lda(solver="eigen", shrinkage=0.3)(d).predict(d["X2"]))
    call("sklearn:LDA(binary).predict_log_proba", lambda d: da.LinearDiscriminantAnalysis().fit(d["X"], d["y2"]).predict_log_proba(d["X2"]))
    call("sklearn:LDA.coef_", lambda d: lda()(d).coef_)

    for solver in ("full", "covariance_eigh", "randomized"):
        kw = {"random_state": 0} if solver == "randomized" else {}
        call(f"sklearn:PCA({solver}).fit_transform", lambda d, s=solver, kw=kw: dec.PCA(2, svd_solver=s, **kw).fit_transform(d["X"]))
        call(f"sklearn:PCA({solver}).explained_variance_ratio_", lambda d, s=solver, kw=kw: dec.PCA(3, svd_solver=s, **kw).fit(d["X"]).explained_variance_ratio_)
    call("sklearn:PCA.inverse_transform", lambda d: (lambda p: p.inverse_transform(p.transform(d["X2"])))(dec.PCA(3).fit(d["X"])))
    call("sklearn:PCA(whiten).transform", lambda d: dec.PCA(3, whiten=True).fit(d["X"]).transform(d["X2"]))
    call("sklearn:PCA(0.8).n_components_", lambda d: dec.PCA(0.8, svd_solver="full").fit(d["X"]).n_components_)
    call("sklearn:PCA.score", lambda d: dec.PCA(2).fit(d["X"]).score(d["X2"]))
    call("sklearn:PCA.get_covariance", lambda d: dec.PCA(2).fit(d["X"]).get_covariance())

    for solver in ("svd", "cholesky", "lbfgs"):
        kw = {"positive": True} if solver == "lbfgs" else {}
        call(f"sklearn:Ridge({solver}).predict", lambda d, s=solver, kw=kw: lm.Ridge(alpha=1.0, solver=s, **kw).fit(d["X"], d["yr"]).predict(d["X2"]))
    call("sklearn:Ridge.coef_", lambda d: lm.Ridge(alpha=0.5).fit(d["X"], d["yr"]).coef_)
    call("sklearn:Ridge(no intercept).score", lambda d: lm.Ridge(fit_intercept=False).fit(d["X"], d["yr"]).score(d["X"], d["yr"]))
    call("sklearn:Ridge(sample_weight).predict", lambda d: lm.Ridge().fit(d["X"], d["yr"], sample_weight=d["ypos"]).predict(d["X2"]))
    call("sklearn:RidgeCV.predict", lambda d: lm.RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(d["X"], d["yr"]).predict(d["X2"]))
    call("sklearn:RidgeCV.alpha_", lambda d: lm.RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(d["X"], d["yr"]).alpha_)
    call("sklearn:RidgeClassifier.predict", lambda d: lm.RidgeClassifier().fit(d["X"], d["y3"]).predict(d["X2"]))
    call("sklearn:RidgeClassifier.decision_function", lambda d: lm.RidgeClassifier().fit(d["X"], d["y3"]).decision_function(d["X2"]))
    call("sklearn:RidgeClassifierCV.predict", lambda d: lm.RidgeClassifierCV().fit(d["X"], d["y2"]).predict(d["X2"]))
    call("sklearn:GaussianNB.predict_proba", lambda d: naive_bayes.GaussianNB().fit(d["X"], d["y3"]).predict_proba(d["X2"]))
    call("sklearn:GaussianNB.predict", lambda d: naive_bayes.GaussianNB().fit(d["X"], d["y3"]).predict(d["X2"]))
    call("sklearn:GaussianMixture.predict", lambda d: mixture.GaussianMixture(2, random_state=0).fit(d["X"]).predict(d["X2"]))
    call("sklearn:Nystroem.fit_transform", lambda d: ka.Nystroem(n_components=10, random_state=0).fit_transform(d["X"]))
    call("sklearn:LogisticRegression.predict_proba", lambda d: lm.LogisticRegression().fit(d["X"], d["y3"]).predict_proba(d["X2"]))

    scalers = {
        "StandardScaler": lambda: pp.StandardScaler(), "StandardScaler(no mean)": lambda: pp.StandardScaler(with_mean=False),
        "MinMaxScaler": lambda: pp.MinMaxScaler(), "MinMaxScaler(-1,1)": lambda: pp.MinMaxScaler((-1, 1)),
        "MaxAbsScaler": lambda: pp.MaxAbsScaler(), "Normalizer": lambda: pp.Normalizer(),
        "Normalizer(l1)": lambda: pp.Normalizer("l1"), "Normalizer(max)": lambda: pp.Normalizer("max"),
        "PolynomialFeatures": lambda: pp.PolynomialFeatures(2), "Binarizer": lambda: pp.Binarizer(threshold=0.1),
    }
    for name, make in scalers.items():
        call(f"sklearn:{name}.fit_transform", lambda d, make=make: make().fit_transform(d["X"]))
        call(f"sklearn:{name}.transform", lambda d, make=make: make().fit(d["X"]).transform(d["X2"]))
    for name in ("StandardScaler", "MinMaxScaler", "MaxAbsScaler"):
        call(f"sklearn:{name}.inverse_transform", lambda d, n=name: (lambda s: s.inverse_transform(s.transform(d["X2"])))(getattr(pp, n)().fit(d["X"])))
        call(f"sklearn:{name}.partial_fit", lambda d, n=name: getattr(pp, n)().partial_fit(d["X"][:20]).partial_fit(d["X"][20:]).transform(d["X2"]))
    call("sklearn:KernelCenterer.fit_transform", lambda d: pp.KernelCenterer().fit_transform(d["X"][:5] @ d["X"][:5].T))
    call("sklearn:LabelEncoder.fit_transform", lambda d: pp.LabelEncoder().fit_transform(d["lab"]))
    call("sklearn:LabelEncoder.classes_", lambda d: pp.LabelEncoder().fit(d["lab"]).classes_)
    call("sklearn:LabelEncoder.inverse_transform", lambda d: pp.LabelEncoder().fit(d["lab"]).inverse_transform(d["lab"][:3] * 0))
    for fname in ("scale", "minmax_scale", "maxabs_scale", "normalize"):
        call(f"sklearn:preprocessing.{fname}", lambda d, f=fname: getattr(pp, f)(d["X"]))
    call("sklearn:preprocessing.normalize(axis=0)", lambda d: pp.normalize(d["X"], axis=0))
    call("sklearn:preprocessing.label_binarize", lambda d: pp.label_binarize(d["y3"], classes=[0, 1, 2]))

    clf = {"accuracy_score": m.accuracy_score, "zero_one_loss": m.zero_one_loss, "f1_score": m.f1_score,
           "precision_score": m.precision_score, "recall_score": m.recall_score, "jaccard_score": m.jaccard_score,
           "confusion_matrix": m.confusion_matrix, "matthews_corrcoef": m.matthews_corrcoef,
           "balanced_accuracy_score": m.balanced_accuracy_score, "hamming_loss": m.hamming_loss,
           "cohen_kappa_score": m.cohen_kappa_score, "fbeta_score": lambda a, b: m.fbeta_score(a, b, beta=2.0),
           "precision_recall_fscore_support": m.precision_recall_fscore_support,
           "multilabel_confusion_matrix": m.multilabel_confusion_matrix}
    for name, f in clf.items():
        call(f"sklearn:metrics.{name}", lambda d, f=f: f(d["y2"], d["y2pred"]))
    call("sklearn:metrics.f1_score(macro)", lambda d: m.f1_score(d["y3"], (d["y3"] + d["y2pred"]) % 3, average="macro"))
    call("sklearn:metrics.confusion_matrix(3)", lambda d: m.confusion_matrix(d["y3"], (d["y3"] + d["y2pred"]) % 3))
    call("sklearn:metrics.accuracy_score(weights)", lambda d: m.accuracy_score(d["y2"], d["y2pred"], sample_weight=d["ypos"]))
    reg = ["r2_score", "mean_squared_error", "mean_absolute_error", "explained_variance_score", "max_error",
           "median_absolute_error", "mean_absolute_percentage_error", "root_mean_squared_error", "d2_absolute_error_score"]
    for name in reg:
        call(f"sklearn:metrics.{name}", lambda d, n=name: getattr(m, n)(d["yr"], d["yr2"]))
    for name in ("mean_squared_log_error", "root_mean_squared_log_error", "mean_poisson_deviance",
                 "mean_gamma_deviance", "d2_tweedie_score"):
        call(f"sklearn:metrics.{name}", lambda d, n=name: getattr(m, n)(d["ypos"], d["ypos2"]))
    call("sklearn:metrics.mean_tweedie_deviance", lambda d: m.mean_tweedie_deviance(d["ypos"], d["ypos2"], power=1.5))
    call("sklearn:metrics.mean_pinball_loss", lambda d: m.mean_pinball_loss(d["yr"], d["yr2"], alpha=0.3))
    call("sklearn:metrics.r2_score(multioutput)", lambda d: m.r2_score(d["X"], d["X"] * 0.9 + 0.1, multioutput="raw_values"))
    call("sklearn:metrics.log_loss", lambda d: m.log_loss(d["y3"], d["P"]))
    call("sklearn:metrics.brier_score_loss", lambda d: m.brier_score_loss(d["y2"], d["prob"]))
    call("sklearn:metrics.roc_auc_score", lambda d: m.roc_auc_score(d["y2"], d["prob"]))
    call("sklearn:metrics.roc_curve", lambda d: m.roc_curve(d["y2"], d["prob"]))
    call("sklearn:metrics.average_precision_score", lambda d: m.average_precision_score(d["y2"], d["prob"]))
    call("sklearn:metrics.det_curve", lambda d: m.det_curve(d["y2"], d["prob"]))
    call("sklearn:metrics.precision_recall_curve", lambda d: m.precision_recall_curve(d["y2"], d["prob"]))
    call("sklearn:metrics.top_k_accuracy_score", lambda d: m.top_k_accuracy_score(d["y3"], d["P"], k=2))

    kernels = ["euclidean_distances", "cosine_similarity", "cosine_distances", "manhattan_distances",
               "linear_kernel", "polynomial_kernel", "rbf_kernel", "sigmoid_kernel", "laplacian_kernel",
               "pairwise_distances", "nan_euclidean_distances"]
    for name in kernels:
        call(f"sklearn:pairwise.{name}", lambda d, n=name: getattr(pw, n)(d["X2"], d["X"]))
    call("sklearn:pairwise.euclidean_distances(squared)", lambda d: pw.euclidean_distances(d["X2"], squared=True))
    for name in ("chi2_kernel", "additive_chi2_kernel"):
        call(f"sklearn:pairwise.{name}", lambda d, n=name: getattr(pw, n)(d["Xpos"][:6], d["Xpos"]))
    for metric in ("rbf", "linear", "polynomial", "cosine", "sigmoid"):
        call(f"sklearn:pairwise_kernels({metric})", lambda d, mt=metric: pw.pairwise_kernels(d["X2"], d["X"], metric=mt))
    for name in ("paired_euclidean_distances", "paired_cosine_distances", "paired_manhattan_distances"):
        call(f"sklearn:pairwise.{name}", lambda d, n=name: getattr(pw, n)(d["X"], d["X"][::-1]))
    call("sklearn:pairwise_distances_argmin", lambda d: m.pairwise_distances_argmin(d["X2"], d["X"]))
    call("sklearn:train_test_split", lambda d: ms.train_test_split(d["X"], d["yr"], test_size=0.25, random_state=0))
    call("sklearn:extmath.softmax", lambda d: extmath.softmax(d["X"] * 1.0))


# -- SciPy --------------------------------------------------------------------------------------

def _scipy_calls() -> None:
    import scipy.cluster.hierarchy as hier
    import scipy.cluster.vq as vq
    import scipy.fft as sfft
    import scipy.integrate as integ
    import scipy.signal as sig
    import scipy.special as sp
    import scipy.stats as st

    unary_real = ["erf", "erfc", "erfcx", "expit", "gammaln", "log_ndtr", "ndtr", "i0", "i0e", "i1", "i1e",
                  "entr", "gamma", "digamma", "log_expit", "loggamma", "sinc", "cbrt", "exp10", "exp2", "expm1", "log1p"]
    for name in unary_real:
        call(f"scipy:special.{name}", lambda d, n=name: getattr(sp, n)(d["pos"] if n in ("gammaln", "digamma", "loggamma") else d["v"]))
    for name in ("logit", "ndtri", "erfinv", "erfcinv"):
        call(f"scipy:special.{name}", lambda d, n=name: getattr(sp, n)(d["u"]))
    for name in ("xlogy", "xlog1py", "rel_entr", "kl_div", "betaln", "beta", "gammainc", "gammaincc", "chdtr", "chdtrc", "stdtr", "pdtr"):
        call(f"scipy:special.{name}", lambda d, n=name: getattr(sp, n)(d["pos"], d["pos"][::-1]))
    call("scipy:special.zeta", lambda d: sp.zeta(d["pos"] + 1.5, d["pos"]))
    call("scipy:special.betainc", lambda d: sp.betainc(d["pos"], d["pos"][::-1], d["u"]))
    call("scipy:special.bdtr", lambda d: sp.bdtr(d["pos"] * 2, d["pos"] * 4 + 1, d["u"]))
    call("scipy:special.fdtr", lambda d: sp.fdtr(d["pos"], d["pos"][::-1], d["pos"]))
    call("scipy:special.nbdtr", lambda d: sp.nbdtr(d["pos"] * 2, d["pos"] + 1, d["u"]))
    call("scipy:special.poch", lambda d: sp.poch(d["pos"], d["u"]))
    call("scipy:special.polygamma", lambda d: sp.polygamma(1, d["pos"]))
    call("scipy:special.multigammaln", lambda d: sp.multigammaln(d["pos"][0] + 3.0, 2))
    for name in ("softmax", "log_softmax", "logsumexp"):
        call(f"scipy:special.{name}", lambda d, n=name: getattr(sp, n)(d["M"]))
        call(f"scipy:special.{name}(axis=1)", lambda d, n=name: getattr(sp, n)(d["M"], axis=1))
    call("scipy:special.logsumexp(b)", lambda d: sp.logsumexp(d["v"], b=d["pos"]))
    call("scipy:special.logsumexp(return_sign)", lambda d: sp.logsumexp(d["v"], b=d["v"], return_sign=True))

    for name in ("zscore", "skew", "kurtosis", "variation", "sem", "tmean", "tvar", "tstd", "tmin", "tmax", "iqr",
                 "entropy", "differential_entropy", "median_abs_deviation", "gstd"):
        call(f"scipy:stats.{name}", lambda d, n=name: getattr(st, n)(d["pos"]))
    for name in ("gmean", "hmean"):
        call(f"scipy:stats.{name}", lambda d, n=name: getattr(st, n)(d["pos"]))
        call(f"scipy:stats.{name}(axis=0)", lambda d, n=name: getattr(st, n)(d["Xpos"], axis=0))
    call("scipy:stats.pmean", lambda d: st.pmean(d["pos"], 2.5))
    call("scipy:stats.moment", lambda d: st.moment(d["v"], order=3))
    call("scipy:stats.moment(orders)", lambda d: st.moment(d["X"], order=[1, 2, 4], axis=0))
    call("scipy:stats.skew(axis=1)", lambda d: st.skew(d["X"], axis=1))
    call("scipy:stats.kurtosis(fisher=False)", lambda d: st.kurtosis(d["X"], fisher=False))
    call("scipy:stats.zscore(axis=None)", lambda d: st.zscore(d["X"], axis=None))
    call("scipy:stats.zmap", lambda d: st.zmap(d["X2"], d["X"]))
    call("scipy:stats.describe", lambda d: tuple(st.describe(d["v"]))[1:])
    call("scipy:stats.trim_mean", lambda d: st.trim_mean(d["v"], 0.1))
    call("scipy:stats.entropy(qk)", lambda d: st.entropy(d["pos"], d["pos"][::-1]))
    call("scipy:stats.rankdata", lambda d: st.rankdata(d["lab"]))
    call("scipy:stats.rankdata(axis)", lambda d: st.rankdata(d["X"], axis=0))
    call("scipy:stats.ttest_1samp", lambda d: tuple(st.ttest_1samp(d["v"], 0.1)))
    call("scipy:stats.ttest_ind", lambda d: tuple(st.ttest_ind(d["v"], d["pos"])))
    call("scipy:stats.ttest_ind(welch)", lambda d: tuple(st.ttest_ind(d["v"], d["pos"], equal_var=False)))
    call("scipy:stats.ttest_rel", lambda d: tuple(st.ttest_rel(d["v"], d["pos"])))
    call("scipy:stats.pearsonr", lambda d: tuple(st.pearsonr(d["v"], d["pos"])))
    call("scipy:stats.chisquare", lambda d: tuple(st.chisquare(d["obs"])))
    call("scipy:stats.power_divergence", lambda d: tuple(st.power_divergence(d["obs"], lambda_="log-likelihood")))
    call("scipy:stats.skewtest", lambda d: tuple(st.skewtest(d["yr"])))
    call("scipy:stats.kurtosistest", lambda d: tuple(st.kurtosistest(d["yr"])))
    call("scipy:stats.normaltest", lambda d: tuple(st.normaltest(d["yr"])))
    call("scipy:stats.jarque_bera", lambda d: tuple(st.jarque_bera(d["yr"])))
    call("scipy:stats.bartlett", lambda d: tuple(st.bartlett(d["v"], d["pos"])))
    call("scipy:stats.f_oneway", lambda d: tuple(st.f_oneway(d["v"], d["pos"], d["u"])))
    call("scipy:stats.alexandergovern", lambda d: (lambda r: (r.statistic, r.pvalue))(st.alexandergovern(d["v"], d["pos"], d["u"])))
    call("scipy:stats.linregress", lambda d: tuple(st.linregress(d["v"], d["pos"]))[:5])
    call("scipy:stats.spearmanr", lambda d: tuple(st.spearmanr(d["v"], d["pos"])))
    call("scipy:stats.kendalltau", lambda d: tuple(st.kendalltau(d["v"], d["pos"])))
    call("scipy:stats.wilcoxon", lambda d: tuple(st.wilcoxon(d["v"], d["pos"])))
    call("scipy:stats.mannwhitneyu", lambda d: tuple(st.mannwhitneyu(d["v"], d["pos"])))
    call("scipy:stats.ks_2samp", lambda d: tuple(st.ks_2samp(d["v"], d["pos"]))[:2])
    call("scipy:stats.boxcox_llf", lambda d: st.boxcox_llf(0.5, d["pos"]))
    call("scipy:stats.yeojohnson_llf", lambda d: st.yeojohnson_llf(0.5, d["v"]))
    call("scipy:stats.circmean", lambda d: st.circmean(d["v"]))
    call("scipy:stats.circvar", lambda d: st.circvar(d["v"]))
    call("scipy:stats.circstd", lambda d: st.circstd(d["v"]))
    call("scipy:stats.directional_stats", lambda d: (lambda r: (r.mean_direction, r.mean_resultant_length))(st.directional_stats(d["X"] + 3.0)))
    call("scipy:stats.quantile", lambda d: st.quantile(d["v"], 0.3))
    call("scipy:stats.norm.pdf", lambda d: st.Normal(mu=0.5, sigma=2.0).pdf(d["v"]))
    call("scipy:stats.norm.logcdf", lambda d: st.Normal().logcdf(d["v"]))
    call("scipy:stats.xp_var", lambda d: st.tvar(d["X"], axis=0))

    for name in ("fft", "ifft", "rfft", "hfft", "ihfft", "dct", "idct", "dst", "idst"):
        call(f"scipy:fft.{name}", lambda d, n=name: getattr(sfft, n)(d["s"]))
    for name in ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "rfftn", "dctn", "idctn", "dstn"):
        call(f"scipy:fft.{name}", lambda d, n=name: getattr(sfft, n)(d["img"]))
    call("scipy:fft.irfft", lambda d: sfft.irfft(sfft.rfft(d["s"])))
    call("scipy:fft.irfftn", lambda d: sfft.irfftn(sfft.rfftn(d["img"]), s=(8, 8), axes=(0, 1)))
    call("scipy:fft.fft(n)", lambda d: sfft.fft(d["s"], n=80))
    call("scipy:fft.fft(norm=ortho)", lambda d: sfft.fft(d["s"], norm="ortho"))
    call("scipy:fft.dct(type=1)", lambda d: sfft.dct(d["s"], type=1))
    call("scipy:fft.fftshift", lambda d: sfft.fftshift(d["img"]))
    call("scipy:fft.ifftshift", lambda d: sfft.ifftshift(d["s"]))
    call("scipy:fft.fht", lambda d: sfft.fht(d["s"], dln=0.1, mu=0.0))

    call("scipy:signal.convolve", lambda d: sig.convolve(d["s"], d["k"]))
    call("scipy:signal.convolve(same)", lambda d: sig.convolve(d["s"], d["k"], mode="same"))
    call("scipy:signal.convolve(fft)", lambda d: sig.convolve(d["s"], d["s2"][:9], method="fft"))
    call("scipy:signal.correlate", lambda d: sig.correlate(d["s"], d["k"]))
    call("scipy:signal.correlate(valid)", lambda d: sig.correlate(d["s"], d["s2"][:5], mode="valid"))
    call("scipy:signal.fftconvolve", lambda d: sig.fftconvolve(d["s"], d["s2"]))
    call("scipy:signal.fftconvolve(2d)", lambda d: sig.fftconvolve(d["img"], d["img"][:3, :3], mode="same"))
    call("scipy:signal.oaconvolve", lambda d: sig.oaconvolve(d["s"], d["s2"][:9]))
    call("scipy:signal.convolve2d", lambda d: sig.convolve2d(d["img"], d["img"][:3, :3]))
    call("scipy:signal.correlate2d", lambda d: sig.correlate2d(d["img"], d["img"][:3, :3], mode="same"))
    call("scipy:signal.lfilter", lambda d: sig.lfilter(d["k"], d["k"][:1] * 4.0, d["s"]))
    call("scipy:signal.filtfilt", lambda d: sig.filtfilt(d["k"], d["k"][:1] * 4.0, d["s"]))
    call("scipy:signal.sosfilt", lambda d: sig.sosfilt(d["xp"].asarray(sig.butter(4, 0.2, output="sos")), d["s"]))
    call("scipy:signal.sosfiltfilt", lambda d: sig.sosfiltfilt(d["xp"].asarray(sig.butter(4, 0.2, output="sos")), d["s"]))
    call("scipy:signal.detrend", lambda d: sig.detrend(d["s"]))
    call("scipy:signal.detrend(constant)", lambda d: sig.detrend(d["s"], type="constant"))
    call("scipy:signal.hilbert", lambda d: sig.hilbert(d["s"]))
    call("scipy:signal.welch", lambda d: sig.welch(d["s"], nperseg=16))
    call("scipy:signal.periodogram", lambda d: sig.periodogram(d["s"]))
    call("scipy:signal.csd", lambda d: sig.csd(d["s"], d["s2"], nperseg=16))
    call("scipy:signal.coherence", lambda d: sig.coherence(d["s"], d["s2"], nperseg=16))
    call("scipy:signal.spectrogram", lambda d: sig.spectrogram(d["s"], nperseg=16))
    call("scipy:signal.stft", lambda d: sig.stft(d["s"], nperseg=16))
    call("scipy:signal.resample", lambda d: sig.resample(d["s"], 32))
    call("scipy:signal.resample_poly", lambda d: sig.resample_poly(d["s"], 2, 3))
    call("scipy:signal.decimate", lambda d: sig.decimate(d["s"], 2))
    call("scipy:signal.savgol_filter", lambda d: sig.savgol_filter(d["s"], 7, 2))
    call("scipy:signal.medfilt", lambda d: sig.medfilt(d["s"], 5))
    call("scipy:signal.wiener", lambda d: sig.wiener(d["s"]))
    call("scipy:signal.upfirdn", lambda d: sig.upfirdn(d["k"], d["s"], 2, 1))
    call("scipy:signal.argrelmax", lambda d: sig.argrelmax(d["s"]))
    call("scipy:signal.freqz", lambda d: sig.freqz(d["k"], worN=16))
    call("scipy:signal.sosfreqz", lambda d: sig.freqz_sos(d["xp"].asarray(sig.butter(4, 0.2, output="sos")), worN=16))
    call("scipy:signal.lfilter_zi", lambda d: sig.lfilter_zi(d["k"], d["k"][:1] * 4.0))
    call("scipy:signal.unit_impulse", lambda d: sig.unit_impulse(8, 2))
    call("scipy:signal.get_window", lambda d: sig.get_window("hann", 16))

    call("scipy:cluster.vq.whiten", lambda d: vq.whiten(d["X"]))
    call("scipy:cluster.vq.vq", lambda d: vq.vq(d["X"], d["X"][:3]))
    call("scipy:cluster.vq.kmeans", lambda d: vq.kmeans(d["X"], d["X"][:3], check_finite=False))
    call("scipy:cluster.vq.kmeans2", lambda d: vq.kmeans2(d["X"], d["X"][:3], minit="matrix"))
    call("scipy:cluster.hierarchy.linkage", lambda d: hier.linkage(d["X"][:10], "ward"))
    call("scipy:cluster.hierarchy.fcluster", lambda d: hier.fcluster(hier.linkage(d["X"][:10], "single"), 2, "maxclust"))
    call("scipy:cluster.hierarchy.cophenet", lambda d: hier.cophenet(hier.linkage(d["X"][:10], "average")))
    call("scipy:cluster.hierarchy.leaves_list", lambda d: hier.leaves_list(hier.linkage(d["X"][:10], "complete")))

    call("scipy:integrate.trapezoid", lambda d: integ.trapezoid(d["grid"] ** 2, d["grid"]))
    call("scipy:integrate.simpson", lambda d: integ.simpson(d["grid"] ** 2, x=d["grid"]))
    call("scipy:integrate.cumulative_trapezoid", lambda d: integ.cumulative_trapezoid(d["grid"] ** 2, d["grid"], initial=0))
    call("scipy:integrate.cumulative_simpson", lambda d: integ.cumulative_simpson(d["grid"] ** 2, x=d["grid"]))


# -- array-api-extra ----------------------------------------------------------------------------

def _xpx_calls() -> None:
    import array_api_extra as xpx

    call("xpx:atleast_nd", lambda d: xpx.atleast_nd(d["v"][0], ndim=2))
    call("xpx:cov", lambda d: xpx.cov(d["M"]))
    call("xpx:create_diagonal", lambda d: xpx.create_diagonal(d["k"]))
    call("xpx:create_diagonal(offset)", lambda d: xpx.create_diagonal(d["k"], offset=-1))
    call("xpx:expand_dims", lambda d: xpx.expand_dims(d["M"], axis=(0, -1)))
    call("xpx:kron", lambda d: xpx.kron(d["M"][:2, :2], d["img"][:2, :3]))
    call("xpx:nunique", lambda d: xpx.nunique(d["lab"]))
    for mode in ("constant",):
        call(f"xpx:pad({mode})", lambda d, md=mode: xpx.pad(d["M"], 2, mode=md, constant_values=1.5))
    call("xpx:pad(tuple)", lambda d: xpx.pad(d["M"], ((1, 0), (0, 2))))
    call("xpx:setdiff1d", lambda d: xpx.setdiff1d(d["lab"], d["lab2"]))
    call("xpx:setdiff1d(unique)", lambda d: xpx.setdiff1d(d["lab2"], d["lab"], assume_unique=True))
    call("xpx:union1d", lambda d: xpx.union1d(d["lab"], d["lab2"]))
    call("xpx:isin", lambda d: xpx.isin(d["lab"], d["lab2"]))
    call("xpx:sinc", lambda d: xpx.sinc(d["v"]))
    call("xpx:isclose", lambda d: xpx.isclose(d["v"], d["v"] + 1e-9))
    call("xpx:isclose(nan)", lambda d: xpx.isclose(d["nanv"], d["nanv"], equal_nan=True))
    call("xpx:nan_to_num", lambda d: xpx.nan_to_num(d["nanv"], fill_value=-1.0))
    call("xpx:one_hot", lambda d: xpx.one_hot(d["lab"], 8))
    call("xpx:broadcast_shapes", lambda d: xpx.broadcast_shapes(d["M"].shape, (1, 8)))
    call("xpx:apply_where", lambda d: xpx.apply_where(d["v"] > 0, d["v"], lambda x: x ** 0.5, fill_value=0.0))
    call("xpx:apply_where(f2)", lambda d: xpx.apply_where(d["v"] > 0, d["v"], lambda x: x ** 0.5, lambda x: -x))
    call("xpx:at.set", lambda d: xpx.at(d["v"], slice(0, 3)).set(0.0))
    call("xpx:at.add(mask)", lambda d: xpx.at(d["v"], d["v"] < 0).add(10.0))
    call("xpx:at.multiply(idx)", lambda d: xpx.at(d["v"], d["lab"][:3]).multiply(2.0))
    call("xpx:at.min", lambda d: xpx.at(d["v"], slice(None, None, 2)).min(0.0))
    call("xpx:at.divide", lambda d: xpx.at(d["M"], (slice(1, 3), 2)).divide(4.0))
    call("xpx:partition", lambda d: xpx.partition(d["v"], 5)[5])
    call("xpx:argpartition", lambda d: d["v"][xpx.argpartition(d["v"], 5)[5]])
    call("xpx:angle", lambda d: xpx.angle(d["v"]))
    call("xpx:deg2rad", lambda d: xpx.deg2rad(d["v"]))
    call("xpx:rad2deg", lambda d: xpx.rad2deg(d["v"]))
    call("xpx:searchsorted", lambda d: xpx.searchsorted(d["grid"], d["u"]))
    for name in ("nanmean", "nansum", "nanmax", "nanmin"):
        call(f"xpx:{name}", lambda d, n=name: getattr(xpx, n)(d["nanv"]))
        call(f"xpx:{name}(axis)", lambda d, n=name: getattr(xpx, n)(d["nanM"], axis=1))
    call("xpx:tril_indices", lambda d: xpx.tril_indices(4, xp=d["xp"]))
    call("xpx:triu_indices", lambda d: xpx.triu_indices(4, offset=1, xp=d["xp"]))
    call("xpx:diag_indices", lambda d: xpx.diag_indices(3, xp=d["xp"]))
    call("xpx:unravel_index", lambda d: xpx.unravel_index(d["lab"], (3, 4)))
    call("xpx:default_dtype", lambda d: d["xp"].asarray(0, dtype=xpx.default_dtype(d["xp"])))
    call("xpx:lazy_apply", lambda d: xpx.lazy_apply(lambda a: np.cumsum(a), d["v"], shape=(30,), dtype=d["v"].dtype))


_sklearn_calls()
_scipy_calls()
_xpx_calls()


# -- running and comparing ----------------------------------------------------------------------

def _leaves(obj) -> list:
    """The arrays and numbers of a result (tuples, lists, namedtuples, result objects), as NumPy."""
    if isinstance(obj, (tuple, list)):
        return [leaf for o in obj for leaf in _leaves(o)]
    if isinstance(obj, np.dtype) or obj is None:
        return [np.asarray(str(obj))]
    return [np.asarray(obj)]


def _compare(got: list, want: list) -> str:
    if len(got) != len(want):
        return f"mismatch: {len(got)} outputs, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"mismatch: output {i} is {g.dtype}{list(g.shape)}, want {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "fc":
            if not np.allclose(g, w, rtol=1e-7, atol=1e-10, equal_nan=True):
                return f"mismatch: output {i} differs by up to {np.nanmax(np.abs(g - w)):.3g}"
        elif not np.array_equal(g, w):
            return f"mismatch: output {i} differs"
    return "ok"


def _run(call_: Call, executor: str) -> tuple:
    import arrayx

    with arrayx.use_executor(executor):
        data = {name: arrayx.asarray(a, copy=True) for name, a in INPUTS.items()}  # clients write into inputs
        data["xp"] = arrayx
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _leaves(call_.fn(data))


def run(executor: str, ids=None) -> dict:
    """Call id -> "ok" or what went wrong, for every call on ``executor`` against the NumPy executor."""
    import sklearn

    sklearn.set_config(array_api_dispatch=True)
    if executor == "dask":
        from arrayx.executors import dask as xd

        xd.set_scheduler("sync")
    outcomes = {}
    for c in CALLS:
        if ids is not None and c.id not in ids:
            continue
        try:
            want = _run(c, "numpy")
        except Exception as e:  # the client refuses even NumPy-backed arrays
            outcomes[c.id] = f"client: {type(e).__name__}: {str(e)[:200]}"
            continue
        try:
            got = _run(c, executor)
        except Exception as e:
            outcomes[c.id] = f"error: {type(e).__name__}: {str(e)[:200]}"
            continue
        outcomes[c.id] = _compare(got, want)
    return outcomes


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
