"""The library classes the store is tested on (tests/test_libraries.py), one case each:
a step that declares an object of the class, a step that mutates it (in place where the
class allows it, else by rebinding the name from itself), and the name to compare.

The list follows what notebooks use (numpy, pandas, scikit-learn, scipy, matplotlib,
plotly, astropy, networkx, polars, statsmodels, xarray and the standard library); the
published coverage cases of Kishu (illinoisdata/kishu, kishu/coverage) were a guide to
which classes matter. Its results are the table in docs/libraries.md.
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    library: str  # the module that must be importable
    cls: str  # the class the value is an instance of
    declare: str
    mutate: str
    var: str


def _c(library: str, cls: str, var: str, declare: str, mutate: str) -> Case:
    return Case(library, cls, declare, mutate, var)


# fmt: off
NUMPY = [
    _c('numpy', 'numpy.ndarray', 'a', 'import numpy as np\na = np.arange(6)', 'a[3] = 10'),
    _c('numpy', 'numpy.ndarray (Fortran order)', 'af', 'af = np.asfortranarray(np.ones((3, 4)))', 'af[0, 1] = 5.0'),
    _c('numpy', 'numpy.ndarray (object)', 'oa', "oa = np.array([{'k': 1}, [1, 2], 'x'], dtype=object)", "oa[0]['k'] = 2"),
    _c('numpy', 'numpy.ndarray (structured)', 'sa', "sa = np.zeros(3, dtype=[('x', 'i4'), ('y', 'f8')])", "sa['x'][1] = 7"),
    _c('numpy', 'numpy.ndarray (datetime64)', 'dt64', "dt64 = np.array(['2024-01-01', '2024-02-01'], dtype='datetime64[D]')", 'dt64[0] += 1'),
    _c('numpy', 'numpy.ma.MaskedArray', 'ma', 'ma = np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])', 'ma[0] = 9'),
    _c('numpy', 'numpy.matrix', 'mtx', 'mtx = np.matrix([[1, 2], [3, 4]])', 'mtx[0, 0] = 9'),
    _c('numpy', 'numpy.recarray', 'rec', "rec = np.rec.fromrecords([(1, 2.0), (3, 4.0)], names='a,b')", 'rec.a[0] = 5'),
    _c('numpy', 'numpy.random.Generator', 'gen', 'gen = np.random.default_rng(0)', 'draw = gen.random(3)'),
    _c('numpy', 'numpy.random.RandomState', 'rs', 'rs = np.random.RandomState(0)', 'draw_rs = rs.rand(2)'),
    _c('numpy', 'numpy.float64', 'f64', 'f64 = np.float64(1.5)', 'f64 = f64 * 2'),
    _c('numpy', 'numpy.dtype', 'dtp', "dtp = np.dtype([('a', 'i4'), ('b', 'f4')])", "dtp = dtp.newbyteorder('>')"),
    _c('numpy', 'numpy.polynomial.Polynomial', 'poly', 'poly = np.polynomial.Polynomial([1, 2, 3])', 'poly.coef[0] = 5'),
]
PANDAS = [
    _c('pandas', 'pandas.DataFrame', 'df', "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3], 'b': [0.1, 0.2, 0.3]})", "df.loc[0, 'a'] = 9"),
    _c('pandas', 'pandas.DataFrame (strings, categories, times)', 'dfm', "dfm = pd.DataFrame({'s': ['x', 'y'], 'c': pd.Categorical(['a', 'b']), 't': pd.date_range('2024-01-01', periods=2)})", "dfm.loc[1, 's'] = 'z'"),
    _c('pandas', 'pandas.Series', 'ser', "ser = pd.Series([1, 2, 3], name='n')", 'ser[1] = 0'),
    _c('pandas', 'pandas.Series (Int64)', 'nser', "nser = pd.Series([1, None, 3], dtype='Int64')", 'nser[1] = 5'),
    _c('pandas', 'pandas.Series (string)', 'sser', "sser = pd.Series(['a', None, 'c'], dtype='string')", "sser[1] = 'b'"),
    _c('pandas', 'pandas.Index', 'idx', "idx = pd.Index(['a', 'b'])", "idx = idx.append(pd.Index(['c']))"),
    _c('pandas', 'pandas.MultiIndex', 'mi', "mi = pd.MultiIndex.from_product([[1, 2], ['a', 'b']])", "mi = mi.set_names(['n', 'l'])"),
    _c('pandas', 'pandas.DatetimeIndex', 'dti', "dti = pd.date_range('2024-01-01', periods=3, freq='D')", 'dti = dti.shift(1)'),
    _c('pandas', 'pandas.Categorical', 'cat', "cat = pd.Categorical(['a', 'b', 'a'])", "cat[0] = 'b'"),
    _c('pandas', 'pandas.Timestamp', 'ts', "ts = pd.Timestamp('2024-01-01 12:00', tz='UTC')", "ts = ts + pd.Timedelta('1D')"),
    _c('pandas', 'pandas.Timedelta', 'td', "td = pd.Timedelta('1h')", 'td = td * 2'),
    _c('pandas', 'pandas.Period', 'per', "per = pd.Period('2024-01', freq='M')", 'per = per + 1'),
    _c('pandas', 'pandas.Interval', 'iv', "iv = pd.Interval(0, 1, closed='left')", 'iv = pd.Interval(iv.left, 2)'),
    _c('pandas', 'pandas.arrays.SparseArray', 'spa', 'spa = pd.arrays.SparseArray([0, 0, 1, 2])', 'spa = spa * 2'),
    _c('pandas', 'pandas.core.groupby.DataFrameGroupBy', 'gb', "gbdf = pd.DataFrame({'k': [1, 1, 2], 'v': [1, 2, 3]})\ngb = gbdf.groupby('k')", "gb = gbdf.groupby('v')"),
]
_XY = 'import numpy as np\nX = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], dtype=float)\ny = np.array([0, 0, 0, 1, 1, 1])\n'
SKLEARN = [
    _c('sklearn', 'sklearn.linear_model.LinearRegression', 'linreg', 'import numpy as np\nX = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], dtype=float)\ny = np.array([0, 0, 0, 1, 1, 1])\nfrom sklearn.linear_model import LinearRegression\nlinreg = LinearRegression().fit(X, y)', 'linreg.coef_ = np.full_like(linreg.coef_, 0.5)'),
    _c('sklearn', 'sklearn.linear_model.LogisticRegression', 'logreg', 'from sklearn.linear_model import LogisticRegression\nlogreg = LogisticRegression().fit(X, y)', 'logreg.fit(X[::-1], y)'),
    _c('sklearn', 'sklearn.linear_model.Ridge', 'ridge', 'from sklearn.linear_model import Ridge\nridge = Ridge(alpha=0.5).fit(X, y)', 'ridge.set_params(alpha=2.0)'),
    _c('sklearn', 'sklearn.linear_model.Lasso', 'lasso', 'from sklearn.linear_model import Lasso\nlasso = Lasso(alpha=0.1).fit(X, y)', 'lasso.alpha = 0.2'),
    _c('sklearn', 'sklearn.cluster.KMeans', 'kmeans', "from sklearn.cluster import KMeans\nkmeans = KMeans(n_clusters=2, random_state=0, n_init='auto').fit(X)", 'kmeans.n_clusters = 3'),
    _c('sklearn', 'sklearn.cluster.MiniBatchKMeans', 'mbk', "from sklearn.cluster import MiniBatchKMeans\nmbk = MiniBatchKMeans(n_clusters=2, random_state=0, batch_size=3, n_init='auto').partial_fit(X)", 'mbk.batch_size = 4'),
    _c('sklearn', 'sklearn.cluster.DBSCAN', 'dbscan', 'from sklearn.cluster import DBSCAN\ndbscan = DBSCAN(eps=3, min_samples=2).fit(X)', 'dbscan.eps = 2.0'),
    _c('sklearn', 'sklearn.mixture.GaussianMixture', 'gmm', 'from sklearn.mixture import GaussianMixture\ngmm = GaussianMixture(n_components=2, random_state=0).fit(X)', 'gmm.weights_ = np.array([0.6, 0.4])'),
    _c('sklearn', 'sklearn.decomposition.PCA', 'pca', 'from sklearn.decomposition import PCA\npca = PCA(n_components=1).fit(X)', 'pca.fit(X * 2)'),
    _c('sklearn', 'sklearn.decomposition.IncrementalPCA', 'ipca', 'from sklearn.decomposition import IncrementalPCA\nipca = IncrementalPCA(n_components=1, batch_size=3).fit(X)', 'ipca.batch_size = 4'),
    _c('sklearn', 'sklearn.preprocessing.StandardScaler', 'scaler', 'from sklearn.preprocessing import StandardScaler\nscaler = StandardScaler().fit(X)', 'scaler.with_mean = False'),
    _c('sklearn', 'sklearn.preprocessing.MinMaxScaler', 'mms', 'from sklearn.preprocessing import MinMaxScaler\nmms = MinMaxScaler().fit(X)', 'mms.fit(X + 1)'),
    _c('sklearn', 'sklearn.preprocessing.OneHotEncoder', 'ohe', "from sklearn.preprocessing import OneHotEncoder\nohe = OneHotEncoder(drop='first').fit([['Female', 1], ['Male', 2]])", "ohe.drop = 'if_binary'"),
    _c('sklearn', 'sklearn.preprocessing.LabelEncoder', 'le', "from sklearn.preprocessing import LabelEncoder\nle = LabelEncoder().fit(['b', 'a', 'c'])", "le.fit(['x', 'y'])"),
    _c('sklearn', 'sklearn.preprocessing.PolynomialFeatures', 'polyf', 'from sklearn.preprocessing import PolynomialFeatures\npolyf = PolynomialFeatures(2).fit(X)', 'polyf.degree = 3'),
    _c('sklearn', 'sklearn.impute.SimpleImputer', 'simp', "from sklearn.impute import SimpleImputer\nsimp = SimpleImputer(strategy='mean').fit([[7, 2, 3], [4, np.nan, 6], [10, 5, 9]])", 'simp.fit([[np.nan, 2, 3], [4, np.nan, 6], [10, 5, np.nan]])'),
    _c('sklearn', 'sklearn.impute.KNNImputer', 'knni', 'from sklearn.impute import KNNImputer\nknni = KNNImputer(n_neighbors=2)\nfilled = knni.fit_transform([[7, 2, 3], [4, np.nan, 6], [10, 5, 9]])', 'knni.n_neighbors = 1'),
    _c('sklearn', 'sklearn.pipeline.Pipeline', 'pipe', 'from sklearn.pipeline import make_pipeline\nfrom sklearn.naive_bayes import GaussianNB\npipe = make_pipeline(StandardScaler(), GaussianNB())', "pipe.steps[1] = ('gaussiannb', GaussianNB(priors=[0.3, 0.7]))"),
    _c('sklearn', 'sklearn.compose.ColumnTransformer', 'ct', "from sklearn.compose import ColumnTransformer\nfrom sklearn.preprocessing import Normalizer\nct = ColumnTransformer([('n1', Normalizer(norm='l1'), [0]), ('n2', Normalizer(norm='l1'), [1])])\nct_out = ct.fit_transform(X)", "ct.remainder = 'passthrough'"),
    _c('sklearn', 'sklearn.tree.DecisionTreeClassifier', 'tree', 'from sklearn.tree import DecisionTreeClassifier\ntree = DecisionTreeClassifier(random_state=0).fit(X, y)', 'tree.max_depth = 5'),
    _c('sklearn', 'sklearn.ensemble.RandomForestClassifier', 'forest', 'from sklearn.ensemble import RandomForestClassifier\nforest = RandomForestClassifier(n_estimators=5, random_state=0).fit(X, y)', 'forest.n_estimators = 6'),
    _c('sklearn', 'sklearn.ensemble.GradientBoostingClassifier', 'gbc', 'from sklearn.ensemble import GradientBoostingClassifier\ngbc = GradientBoostingClassifier(n_estimators=5, random_state=0).fit(X, y)', 'gbc.learning_rate = 0.05'),
    _c('sklearn', 'sklearn.ensemble.AdaBoostClassifier', 'ada', 'from sklearn.ensemble import AdaBoostClassifier\nada = AdaBoostClassifier(n_estimators=5, random_state=0).fit(X, y)', 'ada.n_estimators = 6'),
    _c('sklearn', 'sklearn.ensemble.IsolationForest', 'iso', 'from sklearn.ensemble import IsolationForest\niso = IsolationForest(n_estimators=5, random_state=0).fit(X)', 'iso.contamination = 0.2'),
    _c('sklearn', 'sklearn.svm.SVC', 'svc', 'from sklearn.svm import SVC\nsvc = SVC().fit(X, y)', 'svc.C = 0.5'),
    _c('sklearn', 'sklearn.neighbors.KNeighborsClassifier', 'knn', 'from sklearn.neighbors import KNeighborsClassifier\nknn = KNeighborsClassifier(n_neighbors=3).fit(X, y)', "knn.effective_metric_ = 'manhattan'"),
    _c('sklearn', 'sklearn.naive_bayes.GaussianNB', 'gnb', 'gnb = GaussianNB().fit(X, y)', 'gnb.class_prior_ = np.array([0.3, 0.7])'),
    _c('sklearn', 'sklearn.discriminant_analysis.LinearDiscriminantAnalysis', 'lda', 'from sklearn.discriminant_analysis import LinearDiscriminantAnalysis\nlda = LinearDiscriminantAnalysis().fit(X + np.arange(12).reshape(6, 2), y)', 'lda.fit(X * 2 + np.arange(12).reshape(6, 2), y)'),
    _c('sklearn', 'sklearn.dummy.DummyClassifier', 'dummy', "from sklearn.dummy import DummyClassifier\ndummy = DummyClassifier(strategy='most_frequent').fit(X, y)", 'dummy.n_classes_ = 11'),
    _c('sklearn', 'sklearn.neural_network.MLPClassifier', 'mlp', 'from sklearn.datasets import make_classification\nXm, ym = make_classification(n_samples=60, random_state=1)\nfrom sklearn.neural_network import MLPClassifier\nmlp = MLPClassifier(hidden_layer_sizes=(8,), random_state=1, max_iter=50).fit(Xm, ym)', 'mlp.n_iter_ = 200\nmlp.learning_rate_init = 0.01'),
    _c('sklearn', 'sklearn.feature_extraction.text.CountVectorizer', 'cv', "from sklearn.feature_extraction.text import CountVectorizer\ncv = CountVectorizer()\ncounts = cv.fit_transform(['the first doc', 'the second doc'])", "cv.stop_words_ = {'the', 'and'}"),
    _c('sklearn', 'sklearn.feature_extraction.text.TfidfVectorizer', 'tfidf', "from sklearn.feature_extraction.text import TfidfVectorizer\ntfidf = TfidfVectorizer().fit(['red green blue', 'green blue cyan'])", "tfidf.fit(['one two', 'two three'])"),
    _c('sklearn', 'sklearn.model_selection.KFold', 'kf', 'from sklearn.model_selection import KFold\nkf = KFold(n_splits=2)', 'kf.n_splits = 3'),
    _c('sklearn', 'sklearn.model_selection.GridSearchCV', 'grid', "from sklearn.model_selection import GridSearchCV\ngrid = GridSearchCV(SVC(), {'C': [0.5, 1.0]}, cv=2).fit(X, y)", 'grid.cv = 3'),
    _c('sklearn', 'sklearn.utils.Bunch', 'iris', 'from sklearn.datasets import load_iris\niris = load_iris()', 'iris.data[0, 0] = 15'),
]
SCIPY = [
    _c('scipy', 'scipy.sparse.csr_matrix', 'csr', 'import numpy as np\nfrom scipy import sparse\ncsr = sparse.csr_matrix(np.eye(4))', 'csr[0, 1] = 2.0'),
    _c('scipy', 'scipy.sparse.coo_array', 'coo', 'coo = sparse.coo_array(np.array([[1, 0, 2], [0, 4, 1]]))', 'coo.data[2] = 100'),
    _c('scipy', 'scipy.sparse.csc_matrix', 'csc', 'csc = sparse.csc_matrix(np.eye(3))', 'csc = csc * 2'),
    _c('scipy', 'scipy.spatial.KDTree', 'kdt', 'from scipy.spatial import KDTree\nkdt = KDTree(np.array([[0, 0], [0, 1.1], [1, 0], [1, 1]]))', 'kdt = KDTree(kdt.data * 2)'),
    _c('scipy', 'scipy.spatial.cKDTree', 'ckdt', 'from scipy.spatial import cKDTree\nckdt = cKDTree(np.array([[0, 0], [0, 1.1], [1, 0]]))', 'ckdt = cKDTree(ckdt.data + 1)'),
    _c('scipy', 'scipy.spatial.Delaunay', 'tri', 'from scipy.spatial import Delaunay\npts = np.array([[0, 0], [0, 1.1], [1, 0], [1, 1]])\ntri = Delaunay(pts)', 'tri = Delaunay(np.concatenate((pts, [[0.5, 0.5]])))'),
    _c('scipy', 'scipy.spatial.ConvexHull', 'hull', 'from scipy.spatial import ConvexHull\nhull = ConvexHull(np.random.default_rng(0).random((30, 2)))', 'hull = ConvexHull(np.random.default_rng(1).random((20, 2)))'),
    _c('scipy', 'scipy.spatial.transform.Rotation', 'rot', "from scipy.spatial.transform import Rotation\nrot = Rotation.from_euler('z', 30, degrees=True)", 'rot = rot * rot'),
    _c('scipy', 'scipy.interpolate.CubicSpline', 'cs', 'from scipy.interpolate import CubicSpline\ncs = CubicSpline(np.linspace(0, 10, 10), np.sin(np.linspace(0, 10, 10)))', 'cs.c[0, 0] = 1.0'),
    _c('scipy', 'scipy.interpolate.interp1d', 'i1d', 'from scipy.interpolate import interp1d\ni1d = interp1d([0, 1, 2], [0, 1, 4])', 'i1d.fill_value = 0.0'),
    _c('scipy', 'scipy.stats rv_frozen (norm)', 'nrm', 'from scipy import stats\nnrm = stats.norm(loc=1, scale=2)', 'nrm = stats.norm(loc=nrm.mean() + 1, scale=2)'),
    _c('scipy', 'scipy.stats.gaussian_kde', 'kde', 'kde = stats.gaussian_kde(np.random.default_rng(0).normal(size=50))', 'kde.set_bandwidth(0.5)'),
    _c('scipy', 'scipy.optimize.OptimizeResult', 'opt', "from scipy.optimize import minimize, rosen\nopt = minimize(rosen, [1.3, 0.7, 0.8], method='Nelder-Mead', tol=1e-6)", 'opt.x[0] = 0.0'),
    _c('scipy', 'scipy.signal.lti', 'filt', "from scipy import signal\nfilt = signal.lti(*signal.butter(4, [10, 20], btype='bandpass', analog=True))", 'filt = signal.lti(*signal.bilinear(filt.num, filt.den, 100))'),
]
MATPLOTLIB = [
    _c('matplotlib', 'matplotlib.figure.Figure', 'fig', "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nfig = plt.figure()", "fig.suptitle('title')"),
    _c('matplotlib', 'matplotlib.axes.Axes', 'ax', 'fig2, ax = plt.subplots()', "ax.set_xlabel('x')"),
    _c('matplotlib', 'matplotlib.lines.Line2D', 'line', 'line, = plt.plot([1, 2, 3])', "line.set_color('red')"),
    _c('matplotlib', 'matplotlib.collections.PathCollection', 'sc', 'sc = plt.scatter([1, 2], [3, 4])', 'sc.set_sizes([10, 20])'),
    _c('matplotlib', 'matplotlib.image.AxesImage', 'im', 'im = plt.imshow(np.eye(3))', "im.set_cmap('gray')"),
    _c('matplotlib', 'matplotlib.text.Text', 'txt', "txt = plt.text(0.5, 0.5, 'hi')", "txt.set_text('bye')"),
    _c('matplotlib', 'matplotlib.patches.Rectangle', 'rect', 'from matplotlib.patches import Rectangle\nrect = Rectangle((0, 0), 1, 2)', 'rect.set_width(3)'),
    _c('matplotlib', 'matplotlib.patches.Circle', 'circ', 'from matplotlib.patches import Circle\ncirc = Circle((0, 0), 1)', 'circ.set_radius(2)'),
    _c('matplotlib', 'matplotlib.colors.Normalize', 'norm', 'from matplotlib.colors import Normalize\nnorm = Normalize(0, 1)', 'norm.vmax = 2'),
    _c('matplotlib', 'matplotlib.colors.LogNorm', 'lnorm', 'from matplotlib.colors import LogNorm\nlnorm = LogNorm(1, 10)', 'lnorm.vmin = 2'),
    _c('matplotlib', 'matplotlib.colors.BoundaryNorm', 'bnorm', 'from matplotlib.colors import BoundaryNorm\nbnorm = BoundaryNorm([0, 1, 2], 2)', 'bnorm.clip = True'),
    _c('matplotlib', 'matplotlib.colors.ListedColormap', 'lcmap', "from matplotlib.colors import ListedColormap\nlcmap = ListedColormap(['red', 'blue'])", "lcmap.set_bad('white')"),
    _c('matplotlib', 'matplotlib.colors.LinearSegmentedColormap', 'vir', "vir = plt.get_cmap('viridis').copy()", "vir.set_under('black')"),
    _c('matplotlib', 'matplotlib.path.Path', 'mpath', 'from matplotlib.path import Path\nmpath = Path([[0, 0], [1, 1], [2, 0]])', 'mpath = mpath.transformed(matplotlib.transforms.Affine2D().scale(2))'),
    _c('matplotlib', 'matplotlib.transforms.Affine2D', 'aff', 'from matplotlib.transforms import Affine2D\naff = Affine2D().rotate_deg(30)', 'aff.translate(1, 0)'),
    _c('matplotlib', 'matplotlib.transforms.Bbox', 'bbox', 'from matplotlib.transforms import Bbox\nbbox = Bbox.from_bounds(0, 0, 1, 1)', 'bbox.x1 = 2'),
]
PLOTLY = [
    _c('plotly', 'plotly.graph_objects.Figure', 'bar', "import plotly.graph_objects as go\nbar = go.Figure(data=[go.Bar(x=['A', 'B', 'C'], y=[1, 2, 3])])", "bar.update_layout(title='My Bar Chart')"),
    _c('plotly', 'plotly.graph_objects.Figure (express)', 'pxfig', "import plotly.express as px\npxfig = px.scatter(px.data.iris(), x='sepal_width', y='sepal_length', color='species')", 'pxfig.update_traces(marker=dict(size=10))'),
    _c('plotly', 'plotly.graph_objects.Figure (subplots)', 'subfig', 'from plotly.subplots import make_subplots\nsubfig = make_subplots(rows=1, cols=2)\nsubfig.add_trace(go.Scatter(x=[1, 2], y=[3, 4]), row=1, col=1)', "subfig.update_layout(title='Subplots')"),
    _c('plotly', 'plotly.graph_objects.Scatter', 'trace', 'trace = go.Scatter(x=[1, 2, 3], y=[4, 5, 6])', "trace.name = 'line'"),
    _c('plotly', 'plotly.graph_objects.Layout', 'layout', "layout = go.Layout(title='t')", 'layout.width = 400'),
]
ASTROPY = [
    _c('astropy', 'astropy.units.Quantity', 'q', 'import astropy.units as u\nq = [1.0, 2.0] * u.m', 'q[0] = 3 * u.m'),
    _c('astropy', 'astropy.units.Unit', 'unit', 'unit = u.km / u.s', 'unit = unit * u.s'),
    _c('astropy', 'astropy.table.Table', 'tab', "from astropy.table import Table\ntab = Table({'a': [1, 2], 'b': ['x', 'y']})", "tab['a'][0] = 5"),
    _c('astropy', 'astropy.table.QTable', 'qtab', "from astropy.table import QTable\nqtab = QTable({'d': [1.0, 2.0] * u.m})", "qtab['d'][1] = 3 * u.m"),
    _c('astropy', 'astropy.time.Time', 't', "from astropy.time import Time\nt = Time('2024-01-01T00:00:00', scale='utc')", 't = t + 1 * u.day'),
    _c('astropy', 'astropy.coordinates.SkyCoord', 'sky', 'from astropy.coordinates import SkyCoord\nsky = SkyCoord(ra=10 * u.deg, dec=20 * u.deg)', 'sky = sky.spherical_offsets_by(1 * u.deg, 0 * u.deg)'),
    _c('astropy', 'astropy.coordinates.Angle', 'ang', 'from astropy.coordinates import Angle\nang = Angle([10, 20], unit=u.deg)', 'ang[0] = Angle(5, unit=u.deg)'),
    _c('astropy', 'astropy.modeling.models.Gaussian1D', 'g1', 'from astropy.modeling import models\ng1 = models.Gaussian1D(amplitude=1, mean=0, stddev=1)', 'g1.mean = 0.5'),
    _c('astropy', 'astropy.modeling.models.Polynomial1D', 'p1', 'p1 = models.Polynomial1D(2, c0=1, c1=2)', 'p1.c2 = 3'),
    _c('astropy', 'astropy.cosmology.FlatLambdaCDM', 'cosmo', 'from astropy.cosmology import FlatLambdaCDM\ncosmo = FlatLambdaCDM(H0=70, Om0=0.3)', 'cosmo = FlatLambdaCDM(H0=68, Om0=cosmo.Om0)'),
    _c('astropy', 'astropy.io.fits.PrimaryHDU', 'hdu', 'from astropy.io import fits\nhdu = fits.PrimaryHDU(np.arange(6.0).reshape(2, 3))', "hdu.header['OBSERVER'] = 'me'"),
    _c('astropy', 'astropy.wcs.WCS (CD matrix and SIP)', 'wcs_sip', "from astropy.wcs import WCS, Sip\nwcs_sip = WCS(naxis=2)\nwcs_sip.wcs.crpix = [100, 100]\nwcs_sip.wcs.ctype = ['RA---TAN-SIP', 'DEC--TAN-SIP']\nwcs_sip.wcs.cd = [[-0.001, 1e-4], [1e-4, 0.001]]\nwcs_sip.sip = Sip(np.eye(3) * 1e-5, np.eye(3) * 2e-5, None, None, wcs_sip.wcs.crpix)", "wcs_sip.wcs.crval = [10, 20]"),
    _c('astropy', 'astropy.wcs.WCS', 'wcs', "from astropy.wcs import WCS\nwcs = WCS(naxis=2)\nwcs.wcs.crval = [10, 20]\nwcs.wcs.ctype = ['RA---TAN', 'DEC--TAN']", 'wcs.wcs.crpix = [5, 5]'),
]
NETWORKX = [
    _c('networkx', 'networkx.Graph', 'graph', 'import networkx as nx\ngraph = nx.Graph([(1, 2), (2, 3)])', 'graph.add_edge(3, 4, weight=2)'),
    _c('networkx', 'networkx.DiGraph', 'dig', 'dig = nx.DiGraph([(1, 2)])', 'dig.add_edge(2, 1)'),
    _c('networkx', 'networkx.MultiGraph', 'mg', 'mg = nx.MultiGraph([(1, 2), (1, 2)])', 'mg.add_edge(2, 3)'),
    _c('networkx', 'networkx.Graph (karate club)', 'karate', 'karate = nx.karate_club_graph()', "karate.nodes[0]['club'] = 'new'"),
]
POLARS = [
    _c('polars', 'polars.DataFrame', 'pldf', "import polars as pl\npldf = pl.DataFrame({'A': [1, 2, 3, 4], 'B': [5, 6, 7, 8]})", "pldf = pldf.select(['B', 'A'])"),
    _c('polars', 'polars.Series', 'pls', "pls = pl.Series('s', [1.0, 2.0])", 'pls = pls * 2'),
    _c('polars', 'polars.LazyFrame', 'lf', "lf = pl.DataFrame({'A': [1, 2, 3, 4]}).lazy()", "lf = lf.filter(pl.col('A') > 2)"),
]
STATSMODELS = [
    _c('statsmodels', 'statsmodels.regression.linear_model.OLS', 'ols', 'import numpy as np\nimport statsmodels.api as sm\nXs = sm.add_constant(np.arange(10.0))\nys = np.arange(10.0) * 2 + 1\nols = sm.OLS(ys, Xs)', 'ols.k_constant = 1'),
    _c('statsmodels', 'statsmodels.regression.linear_model.RegressionResultsWrapper', 'olsfit', 'olsfit = sm.OLS(ys, Xs).fit()', 'olsfit = sm.OLS(ys + 1, Xs).fit()'),
    _c('statsmodels', 'statsmodels.genmod.generalized_linear_model.GLM', 'glm', 'scot = sm.datasets.scotland.load()\nglm = sm.GLM(scot.endog, sm.add_constant(scot.exog), family=sm.families.Gamma())', 'glm.family = sm.families.InverseGaussian()'),
]
XARRAY = [
    _c('xarray', 'xarray.DataArray', 'xda', "import numpy as np\nimport xarray as xr\nxda = xr.DataArray(np.arange(6).reshape(2, 3), dims=('x', 'y'), coords={'x': [10, 20]})", 'xda[0, 0] = 100'),
    _c('xarray', 'xarray.Dataset', 'xds', "xds = xr.Dataset({'v': ('t', [1.0, 2.0])}, coords={'t': [0, 1]})", "xds['w'] = xds['v'] * 2"),
]
STDLIB = [
    _c('datetime', 'datetime.datetime', 'when', 'import datetime as dtm\nwhen = dtm.datetime(2024, 1, 1, 12, tzinfo=dtm.timezone.utc)', 'when = when.replace(hour=13)'),
    _c('datetime', 'datetime.timedelta', 'delta', 'delta = dtm.timedelta(days=1)', 'delta = delta * 2'),
    _c('decimal', 'decimal.Decimal', 'dec', "import decimal\ndec = decimal.Decimal('1.10')", 'dec = dec + 1'),
    _c('fractions', 'fractions.Fraction', 'frac', 'import fractions\nfrac = fractions.Fraction(1, 3)', 'frac = frac * 3'),
    _c('collections', 'collections.OrderedDict', 'od', 'import collections\nod = collections.OrderedDict(a=1, b=2)', "od.move_to_end('a')"),
    _c('collections', 'collections.Counter', 'counter', "counter = collections.Counter('hello')", "counter.update('world')"),
    _c('collections', 'collections.deque', 'dq', 'dq = collections.deque([1, 2, 3], maxlen=5)', 'dq.appendleft(0)'),
    _c('collections', 'collections.defaultdict', 'dd', 'dd = collections.defaultdict(list)', "dd['k'].append(1)"),
    _c('collections', 'namedtuple (notebook class)', 'pt', "Pt = collections.namedtuple('Pt', 'x y')\npt = Pt(1, 2)", 'pt = pt._replace(x=5)'),
    _c('dataclasses', 'dataclass (notebook class)', 'rec_dc', 'import dataclasses\n@dataclasses.dataclass\nclass Rec:\n    a: int\n    b: list = dataclasses.field(default_factory=list)\nrec_dc = Rec(1)', 'rec_dc.b.append(2)'),
    _c('pathlib', 'pathlib.PurePosixPath', 'pth', "import pathlib\npth = pathlib.PurePosixPath('data/raw.csv')", "pth = pth.with_suffix('.parquet')"),
    _c('uuid', 'uuid.UUID', 'uid', 'import uuid\nuid = uuid.UUID(int=1)', 'uid = uuid.UUID(int=uid.int + 1)'),
    _c('re', 're.Pattern', 'pat', "import re\npat = re.compile(r'a+b', re.I)", "pat = re.compile(pat.pattern + 'c')"),
    _c('array', 'array.array', 'arr', "import array\narr = array.array('d', [1.0, 2.0])", 'arr.append(3.0)'),
    _c('types', 'types.SimpleNamespace', 'sns', 'import types\nsns = types.SimpleNamespace(a=1)', 'sns.b = 2'),
    _c('functools', 'functools.partial', 'part', 'import functools\npart = functools.partial(max, 3)', 'part = functools.partial(part, 4)'),
]
CASES: list[Case] = [
    *NUMPY, *PANDAS, *SKLEARN, *SCIPY, *MATPLOTLIB, *PLOTLY, *ASTROPY, *NETWORKX, *POLARS,
    *STATSMODELS, *XARRAY, *STDLIB,
]
# fmt: on
