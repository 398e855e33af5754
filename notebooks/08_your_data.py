# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Your own data: files in, certified fits and saved models out
#
# Every model in dualscope reads a user's file into the same `Problem` its built-in
# datasets return (`explorer.datafiles`): CSV/TSV with a header row, LIBSVM/svmlight
# (sparse, optionally `.gz`), NumPy `.npz`, Parquet, and MATLAB `.mat` in MALSAR's
# multitask layout. This notebook walks from a CSV and a LIBSVM file to a certified
# Weston–Watkins SVM, saves the fitted model, reloads it and predicts new rows; then
# fits convex ASO on the School benchmark, if its file is at hand.
#
# The same steps on the command line:
#
# ```
# dualscope solve wwsvm --data train.csv --label cultivar --save m.npz
# dualscope predict --model m.npz --data new.csv --out pred.csv
# ```

# %% tags=["parameters"]
import os

SMALL = os.environ.get("DUALSCOPE_NOTEBOOK_SMALL", "0") == "1"
C = 1.0
tol = 1e-8
test_size = 0.25
seed = 0
school = ""  # MALSAR's school.mat; "": shared/data/school.mat beside the repository
school_tasks = 20 if SMALL else 139
# a raw CSV of your own (text columns, missing values, unscaled numbers); "" writes a
# palmerpenguins-like one; raw_label: its label column
raw_csv = ""
raw_label = "species"

# %% [markdown]
# ## A CSV file, as a course would hand it out
#
# We write scikit-learn's wine data to a CSV whose label column, `cultivar`, holds text
# and is not the last column (so it is named when reading), and the same rows to a
# LIBSVM file (numeric labels, sparse format).

# %%
import tempfile

import numpy as np
import pandas as pd
from sklearn.datasets import dump_svmlight_file, load_wine

from explorer import datafiles, registry
from explorer.sweep.hooks import hooks_of
from solvers import saved

wine = load_wine()
X_raw = (wine.data - wine.data.mean(axis=0)) / wine.data.std(axis=0)
names = ["barolo", "grignolino", "barbera"]
frame = pd.DataFrame(X_raw, columns=[c.replace("/", "_") for c in wine.feature_names])
frame.insert(3, "cultivar", [names[i] for i in wine.target])
folder = tempfile.mkdtemp(prefix="dualscope_nb_")
csv_path = os.path.join(folder, "wine.csv")
svm_path = os.path.join(folder, "wine.svm")
frame.to_csv(csv_path, index=False)
dump_svmlight_file(X_raw, wine.target, svm_path, zero_based=True)
print(open(csv_path).read()[:300])

# %%
table = datafiles.read_table(csv_path, label="cultivar")
print(f"{table.name}: n = {table.n}, d = {table.d}, density {table.density:.2f}, "
      f"label column {table.label_name!r}, classes {sorted(str(v) for v in set(table.y))}")
problem = datafiles.load_problem("wwsvm", csv_path, label="cultivar", test_size=test_size,
                                 seed=seed)
print(problem.description)

# %% [markdown]
# ## A certified fit
#
# `problem` is what the built-in datasets give, so the registry's `solve` (the one the CLI
# and the dashboard use) runs on it unchanged; the duality gap certifies the optimum.

# %%
entry = registry.get("wwsvm")
res = entry.solve(problem, tol=tol, max_iter=10_000, C=C)
print(f"primal {res.primal:.10g}, dual {res.dual:.10g}, relative gap {res.rel_gap:.2e}, "
      f"{res.n_iter} epochs")
assert res.converged and res.rel_gap <= tol
held_out = hooks_of(entry).score(problem, res).value
print(f"held-out accuracy on {len(problem.info['y_test'])} rows: {held_out:.3f}")
assert held_out > 0.85

# %% [markdown]
# ## The same rows from a LIBSVM file
#
# svmlight files are read as sparse CSR matrices (scikit-learn's reader). The WW-SVM
# solver takes dense features here, so the layer densifies a small file (and refuses,
# naming the model, one whose dense copy would exceed its budget). Same rows, same
# split, same optimum.

# %%
sparse_table = datafiles.read_table(svm_path)
print(f"{sparse_table.name}: sparse {sparse_table.sparse}, {sparse_table.X.nnz} non-zeros")
problem_svm = datafiles.load_problem("wwsvm", svm_path, test_size=test_size, seed=seed)
res_svm = entry.solve(problem_svm, tol=tol, max_iter=10_000, C=C)
print(f"primal from the CSV {res.primal:.12g}, from the LIBSVM file {res_svm.primal:.12g}")
assert abs(res.primal - res_svm.primal) <= 1e-6 * max(1.0, abs(res.primal))

# %% [markdown]
# ## Save, reload, predict
#
# `solvers.saved` writes the named arrays (`W`, `alpha`, ...), the parameters, the
# certificate and the data's names to `.npz` (no pickles) or JSON; `load_model` gives back
# an object whose `predict` reproduces the fitted model's predictions bit for bit.

# %%
model_path = os.path.join(folder, "wine_model.npz")
fitted = saved.save_model(model_path, res, model="wwsvm",
                          feature_names=problem.info["feature_names"],
                          class_names=problem.info["class_names"], label_name="cultivar")
back = saved.load_model(model_path)
print(sorted(back.arrays), back.certificate["gap"], [str(c) for c in back.class_names])
X_new = problem.info["X_test"]
pred = back.predict(X_new)
assert np.array_equal(pred, fitted.predict(X_new))
assert np.array_equal(pred, problem.info["class_names"][np.argmax(X_new @ res.W, axis=1)])
print(pred[:8])

# %% [markdown]
# `dualscope predict` does the same from files: the new rows need the training file's
# feature columns (by name); a label column, if present, is scored.

# %%
from explorer import cli

new_csv = os.path.join(folder, "new.csv")
pd.DataFrame(X_new, columns=problem.info["feature_names"]).to_csv(new_csv, index=False)
out_csv = os.path.join(folder, "pred.csv")
assert cli.main(["predict", "--model", model_path, "--data", new_csv, "--out", out_csv]) == 0
from_cli = pd.read_csv(out_csv)["prediction"].to_numpy()
assert list(from_cli) == list(pred)

# %% [markdown]
# ## Bad files are one line
#
# A file the model cannot use is refused with a message naming the file and, where
# known, the line and column; nothing is returned.

# %%
bad = os.path.join(folder, "bad.csv")
with open(bad, "w") as f:
    f.write("alcohol,malic_acid,cultivar\n13.2,1.78,barolo\n12.4,n/a,barbera\n")
try:
    datafiles.load_problem("wwsvm", bad, label="cultivar")
    raise AssertionError("a non-numeric cell must be refused")
except datafiles.DataFileError as exc:
    print(exc)
    assert "line 3, column 'malic_acid'" in str(exc)

# %% [markdown]
# ## A raw CSV: text columns, missing values, unscaled numbers
#
# Data as it comes: palmerpenguins' layout (species, island, bill and flipper lengths in
# mm, body mass in grams, sex, year; `NA` where a value is missing). Read as it is, the
# text columns are an error that names the option to use. `Preprocessing` (scikit-learn's
# transformers, fitted on the training rows) one-hot encodes the text columns, drops the
# incomplete rows and standardises the numbers; the fit is saved with the model as named
# arrays and `predict` applies it to raw rows. Set `raw_csv` in the parameters cell to
# run this on your own file (and `raw_label` to its label column). On the command line:
#
# ```
# dualscope solve wwsvm --data penguins.csv --label species --categorical onehot \
#     --missing drop --scale standard --test-size 0.3 --save m.npz
# dualscope predict --model m.npz --data penguins.csv
# ```

# %%
from solvers.preprocess import Preprocessing

if not raw_csv:
    rng = np.random.default_rng(seed)
    rows = []
    for sp_name, n, islands, mean, sd in (
            ("Adelie", 152, ["Biscoe", "Dream", "Torgersen"], [38.8, 18.3, 190, 3700],
             [2.7, 1.2, 6.5, 460]),
            ("Chinstrap", 68, ["Dream"], [48.8, 18.4, 196, 3733], [3.3, 1.1, 7.1, 384]),
            ("Gentoo", 124, ["Biscoe"], [47.5, 15.0, 217, 5076], [3.1, 1.0, 6.5, 504])):
        for i in range(n):
            m = np.asarray(mean) + rng.standard_normal(4) * np.asarray(sd)
            rows.append([sp_name, islands[i % len(islands)], round(m[0], 1), round(m[1], 1),
                         round(m[2]), round(m[3]), ["male", "female"][i % 2], 2007 + i % 3])
    raw = pd.DataFrame(rows, columns=["species", "island", "bill_length_mm", "bill_depth_mm",
                                      "flipper_length_mm", "body_mass_g", "sex", "year"])
    raw.loc[[3, 271], ["bill_length_mm", "bill_depth_mm", "flipper_length_mm",
                       "body_mass_g", "sex"]] = None
    raw.loc[[8, 9, 10, 11, 47, 178, 218, 256, 268], "sex"] = None
    raw_csv = os.path.join(folder, "penguins.csv")
    raw.to_csv(raw_csv, index=False, na_rep="NA")
try:
    datafiles.read_table(raw_csv, label=raw_label)
except datafiles.DataFileError as exc:
    print(exc)  # names the text column and the option that takes it

# %%
prep = Preprocessing(categorical="onehot", missing="drop", scale="standard")
raw_problem = datafiles.load_problem("wwsvm", raw_csv, label=raw_label, test_size=0.3,
                                     seed=seed, prep=prep)
fp = raw_problem.info["preprocessing"]
print(fp.describe())
print("features after preprocessing:", ", ".join(fp.feature_names_out))
raw_res = entry.solve(raw_problem, tol=1e-6, max_iter=1000, **entry.default_params())
scores = datafiles.held_out_scores("wwsvm", raw_problem, raw_res)
print(f"method {raw_res.method} (the default 'auto' picks it), {raw_res.n_iter} iterations, "
      f"relative gap {raw_res.rel_gap:.1e}; held-out " + ", ".join(map(str, scores)))
assert raw_res.converged

# %% [markdown]
# The saved model carries the preprocessing (arrays `preprocessing.*`): its `predict`
# takes the raw rows, text and all, and refuses a category it never saw, naming it.

# %%
raw_model = os.path.join(folder, "raw_model.npz")
datafiles.fitted_model("wwsvm", raw_problem, raw_res).save(raw_model)
loaded = saved.load_model(raw_model)
print(sorted(k for k in loaded.arrays if k.startswith(saved.PREP_PREFIX)))
rows_in = pd.read_csv(raw_csv).dropna()
print(loaded.predict(rows_in)[:6])
# %% [markdown]
# ## School: 139 schools as tasks (MALSAR's `school.mat`)
#
# The standard multitask regression benchmark (exam scores of 15,362 students, 28
# features including a bias column). MALSAR distributes it as `data/school.mat`; pass its
# path to `school` in the parameters cell. Convex ASO learns a shared subspace across the
# schools; a quarter of each school's students is held out. (In the small run, the first
# `school_tasks` schools only.)

# %%
if not school:  # found from the installed package, whatever the working directory
    import explorer

    repo = os.path.dirname(os.path.dirname(os.path.abspath(explorer.__file__)))
    school = os.path.join(os.path.dirname(repo), "shared", "data", "school.mat")
school = os.path.expanduser(school)
if os.path.exists(school):
    t = datafiles.read_table(school)
    keep = np.isin(t.tasks, np.unique(t.tasks)[:school_tasks])
    from dataclasses import replace

    t = replace(t, X=t.X[keep], y=t.y[keep], tasks=t.tasks[keep])
    train, test = datafiles.split_table(t, test_size, seed=seed)
    prob = datafiles.problem_from_table("caso", train, test)
    caso = registry.get("caso")
    fit = caso.solve(prob, tol=1e-6, max_iter=2000, **caso.default_params())
    score = hooks_of(caso).score(prob, fit)
    name, mse = score.name, score.value
    base = np.mean(np.concatenate([(y - np.mean(ytr)) ** 2 for y, ytr in
                                   zip(prob.info["ys_test"], prob.data["ys"], strict=True)]))
    print(f"{prob.description}: relative gap {fit.rel_gap:.1e}, held-out {name} {mse:.1f} "
          f"(each school's mean score: {base:.1f})")
    assert fit.converged and mse < base
else:
    print(f"{school} not found: get school.mat from the MALSAR toolbox (data/school.mat)")
