"""Deterministic retail transactions shaped like UCI Online Retail II.

Contract: :func:`generate` returns the same frame, row for row, for the same ``seed`` (numpy's PCG64 only;
no wall clock, no hash randomisation). Columns are :data:`COLUMNS`, in that order, sorted by ``invoice_date``
then ``invoice``:

- ``invoice`` text: six digits from 489434 up in time order; a cancellation is ``C`` + its own number.
- ``stock_code`` text (5 digits, some with a letter suffix), ``description`` text (upper case, one per code).
- ``quantity`` integer: positive on sales, negative on cancellations.
- ``invoice_date`` timestamp (no zone) between :data:`HISTORY_START` and :data:`END` (exclusive), shop hours.
- ``unit_price`` numeric(10,2) in pounds: a product's list price × the customer's range × a volume discount;
  0.4 % of lines are free samples at 0.00.
- ``customer_id`` integer or NULL (≈ 20 % of invoices are guest checkouts), ``country`` text.

Shape, as in the UCI data: one year of history (:data:`HISTORY_START` to :data:`HISTORY_END`) plus the scenario's
daily loads (:data:`SCENARIO_DAYS` more days); weekly and yearly seasonality (no Saturday trading, a November
peak, closed over Christmas); ≈ 5,400 registered customers who arrive through the year, buy at their own rate and
stop buying (churn) at their own hazard; ≈ 4,000 products with Zipf popularity; ≈ 20 lines per invoice;
cancellations of part of an invoice a few days later. A hidden loyalty score per customer drives purchase rate,
basket size, price range, cancellations and churn together, so the features built from these columns predict the
customers' future (the demo's models learn exactly that).
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

COLUMNS = ("invoice", "stock_code", "description", "quantity", "invoice_date", "unit_price", "customer_id", "country")
HISTORY_START = dt.date(2024, 10, 1)
HISTORY_END = dt.date(2025, 10, 1)
"""First day not in the history load (the scenario's day 0)."""
SCENARIO_DAYS = 8
END = HISTORY_END + dt.timedelta(days=SCENARIO_DAYS)
DEFAULT_SEED = 20251001

N_CUSTOMERS = 5_400
N_PRODUCTS = 4_000
FIRST_INVOICE = 489_434
FIRST_CUSTOMER = 12_346

COUNTRIES = (
    ("United Kingdom", 0.885),
    ("Germany", 0.022),
    ("France", 0.018),
    ("EIRE", 0.015),
    ("Netherlands", 0.009),
    ("Spain", 0.008),
    ("Belgium", 0.006),
    ("Switzerland", 0.005),
    ("Portugal", 0.005),
    ("Australia", 0.004),
    ("Norway", 0.003),
    ("Italy", 0.003),
    ("Channel Islands", 0.003),
    ("Finland", 0.002),
    ("Cyprus", 0.002),
    ("Sweden", 0.002),
    ("Denmark", 0.002),
    ("Austria", 0.002),
    ("Japan", 0.002),
    ("Poland", 0.002),
)
# Month (1..12) → relative trading volume: a November peak, a quiet January, a busy back-to-school September.
MONTH_FACTOR = (0.72, 0.74, 0.92, 0.86, 0.94, 0.93, 0.90, 0.92, 1.10, 1.22, 1.50, 0.95)
# Monday..Sunday; the shop doesn't trade on Saturdays (as in the UCI data).
WEEKDAY_FACTOR = (1.0, 1.12, 1.10, 1.22, 0.88, 0.0, 0.62)
PRICE_POINTS = np.array(
    [
        *(0.19, 0.29, 0.42, 0.55, 0.65, 0.85, 1.25, 1.45, 1.65, 1.95, 2.10, 2.55, 2.95, 3.25, 3.75, 4.25, 4.95),
        *(5.95, 6.75, 7.95, 8.50, 9.95, 12.75, 14.95, 16.95, 19.95, 24.95, 29.95, 39.95),
    ]
)
QUANTITIES = np.array([1, 2, 3, 4, 6, 8, 10, 12, 16, 24, 25, 36, 48, 72, 96, 144])
QUANTITY_P = np.array([16, 12, 8, 7, 10, 4, 5, 14, 2, 8, 2, 2, 3, 1.5, 1.5, 0.8])

_ADJECTIVES = "WHITE,RED,PINK,BLUE,GREEN,IVORY,VINTAGE,RETRO,REGENCY,JUMBO,SMALL,LARGE,MINI,SET/3,SET/6,PACK OF 12"
_THEMES = "HEART,STAR,SPOTTY,PAISLEY,DOILY,BIRD,FLORAL,UNION JACK,CHRISTMAS,POLKADOT,LOVE,ROSE,SKULL,BAROQUE"
_NOUNS = (
    "T-LIGHT HOLDER,LUNCH BAG,CAKE CASES,TEA CUP AND SAUCER,HOT WATER BOTTLE,DOORMAT,CANDLE,BUNTING,NAPKINS,"
    "PAPER CHAIN KIT,WATER BOTTLE,MUG,PURSE,JAM JAR,STORAGE TIN,PHOTO FRAME,CUSHION COVER,WALL CLOCK,BAKING SET,"
    "CHOPSTICKS,SHOPPER BAG,TISSUES,GIFT WRAP,COAT RACK,PICNIC BASKET,SIGN,NOTEBOOK,RIBBONS,TRINKET BOX,BELL"
)


def _days() -> pd.DatetimeIndex:
    return pd.date_range(HISTORY_START, END - dt.timedelta(days=1), freq="D")


def _seasonality(days: pd.DatetimeIndex) -> np.ndarray:
    month = np.array(MONTH_FACTOR)[days.month - 1]
    weekday = np.array(WEEKDAY_FACTOR)[days.weekday]
    closed = ((days.month == 12) & (days.day >= 23)) | ((days.month == 1) & (days.day <= 3))
    return np.where(closed, 0.0, month * weekday)


def _products(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stock codes, descriptions, list prices and Zipf popularity (summing to 1) of the catalogue."""
    adjectives, themes, nouns = _ADJECTIVES.split(","), _THEMES.split(","), _NOUNS.split(",")
    names: set[str] = set()
    descriptions: list[str] = []
    while len(descriptions) < N_PRODUCTS:
        words = [adjectives[rng.integers(len(adjectives))], themes[rng.integers(len(themes))]]
        name = " ".join([*words[: 1 + int(rng.integers(2))], nouns[rng.integers(len(nouns))]])
        if name in names:
            name = f"{name} {int(rng.integers(2, 9))}"
        if name not in names:
            names.add(name)
            descriptions.append(name)
    numbers = rng.choice(np.arange(10_000, 90_000), size=N_PRODUCTS, replace=False)
    suffix = np.where(rng.random(N_PRODUCTS) < 0.18, rng.choice(list("ABCDEFGLPS"), size=N_PRODUCTS), "")
    codes = np.array([f"{n}{s}" for n, s in zip(numbers, suffix, strict=True)])
    price_index = np.clip(np.round(rng.normal(10.5, 4.8, N_PRODUCTS)), 0, len(PRICE_POINTS) - 1).astype(int)
    prices = PRICE_POINTS[price_index]
    popularity = 1.0 / (np.arange(N_PRODUCTS) + 12.0) ** 0.95
    popularity = rng.permutation(popularity / popularity.sum())
    return codes, np.array(descriptions), prices, popularity


def generate(seed: int = DEFAULT_SEED) -> pd.DataFrame:
    """Every transaction from :data:`HISTORY_START` to :data:`END` (exclusive), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    days = _days()
    n_days = len(days)
    season = _seasonality(days)

    # Customers: a hidden loyalty score drives everything they do.
    loyalty = rng.normal(0.0, 1.0, N_CUSTOMERS)
    noise = rng.normal(0.0, 1.0, (4, N_CUSTOMERS))
    established = rng.random(N_CUSTOMERS) < 0.55
    arrival = np.where(established, 0, rng.integers(0, n_days, N_CUSTOMERS))
    lifetime = rng.exponential(210.0 * np.exp(0.75 * loyalty))
    leave = arrival + lifetime
    rate = 0.034 * np.exp(0.55 * loyalty + 0.40 * noise[0])
    basket = np.exp(0.30 * loyalty + 0.25 * noise[1])
    price_range = np.exp(0.16 * loyalty + 0.08 * noise[2])
    cancel_p = np.clip(0.06 * np.exp(-0.65 * loyalty + 0.3 * noise[3]), 0.0, 0.35)
    country_names = np.array([c for c, _ in COUNTRIES])
    country_p = np.array([p for _, p in COUNTRIES])
    country = rng.choice(country_names, size=N_CUSTOMERS, p=country_p / country_p.sum())
    customer_ids = FIRST_CUSTOMER + rng.permutation(N_CUSTOMERS + 600)[:N_CUSTOMERS]

    # Invoices per (customer, day): Poisson on rate × seasonality while the customer is active.
    day_index = np.arange(n_days)
    active = (day_index[None, :] >= arrival[:, None]) & (day_index[None, :] < leave[:, None])
    counts = rng.poisson(rate[:, None] * season[None, :] * active)
    cust_of_invoice, day_of_invoice = np.nonzero(counts)
    repeat = counts[cust_of_invoice, day_of_invoice]
    cust_of_invoice = np.repeat(cust_of_invoice, repeat)
    day_of_invoice = np.repeat(day_of_invoice, repeat)
    guests = rng.poisson(36.0 * season)
    guest_days = np.repeat(day_index, guests)

    n_cust_inv, n_guest_inv = len(cust_of_invoice), len(guest_days)
    inv_customer = np.concatenate([cust_of_invoice, np.full(n_guest_inv, -1)])
    inv_day = np.concatenate([day_of_invoice, guest_days])
    n_inv = n_cust_inv + n_guest_inv
    seconds = (rng.normal(12.5, 2.6, n_inv).clip(7.25, 19.9) * 3600).astype(np.int64)
    inv_time = days.values[inv_day].astype("datetime64[s]") + seconds.astype("timedelta64[s]")
    inv_basket = np.where(inv_customer >= 0, basket[np.maximum(inv_customer, 0)], 1.25)
    lines = 1 + rng.negative_binomial(1.6, 1.6 / (1.6 + 17.5 * inv_basket))

    # Lines: product by popularity, quantity, price by the customer's range and a volume discount.
    codes, descriptions, list_prices, popularity = _products(rng)
    line_inv = np.repeat(np.arange(n_inv), lines)
    n_lines = len(line_inv)
    product = rng.choice(N_PRODUCTS, size=n_lines, p=popularity)
    quantity = rng.choice(QUANTITIES, size=n_lines, p=QUANTITY_P / QUANTITY_P.sum())
    line_customer = inv_customer[line_inv]
    big = (line_customer >= 0) & (rng.random(n_lines) < 0.25 * (loyalty[np.maximum(line_customer, 0)] > 1.0))
    quantity = np.where(big, quantity * 2, quantity)
    discount = np.where(quantity >= 48, 0.78, np.where(quantity >= 12, 0.88, 1.0))
    customer_range = np.where(line_customer >= 0, price_range[np.maximum(line_customer, 0)], 1.0)
    unit_price = np.round(list_prices[product] * customer_range * discount, 2)
    unit_price = np.where(rng.random(n_lines) < 0.004, 0.0, unit_price)

    # Cancellations: part of an invoice taken back 0-10 days later (never past the end), negative quantities.
    cancelled = (inv_customer >= 0) & (rng.random(n_inv) < cancel_p[np.maximum(inv_customer, 0)])
    cancel_time = inv_time + (rng.uniform(0.05, 10.0, n_inv) * 86_400).astype("timedelta64[s]")
    end_ts = np.datetime64(END.isoformat(), "s")
    cancelled &= cancel_time < end_ts
    take_back = cancelled[line_inv] & (rng.random(n_lines) < 0.5)
    first_line = np.r_[0, np.cumsum(lines)[:-1]]
    take_back[first_line[cancelled]] = True  # at least one line per cancellation
    c_inv_ids = np.flatnonzero(cancelled)
    c_number = np.full(n_inv, -1)
    c_number[c_inv_ids] = n_inv + np.arange(len(c_inv_ids))

    # Number every invoice (sales and cancellations) in time order.
    all_time = np.concatenate([inv_time, cancel_time[c_inv_ids]])
    order = np.argsort(all_time, kind="stable")
    rank = np.empty(len(all_time), dtype=np.int64)
    rank[order] = np.arange(len(all_time))
    number = FIRST_INVOICE + rank

    sale_inv = line_inv
    back = np.flatnonzero(take_back)
    back_inv = c_number[line_inv[back]]
    frame_inv = np.concatenate([sale_inv, back_inv])
    is_cancel = np.concatenate([np.zeros(n_lines, bool), np.ones(len(back), bool)])
    idx = np.concatenate([np.arange(n_lines), back])
    cust = line_customer[idx]
    frame = pd.DataFrame(
        {
            "invoice": np.where(is_cancel, "C", "") + number[frame_inv].astype(str),
            "stock_code": codes[product[idx]],
            "description": descriptions[product[idx]],
            "quantity": np.where(is_cancel, -quantity[idx], quantity[idx]),
            "invoice_date": all_time[frame_inv],
            "unit_price": unit_price[idx],
            "customer_id": pd.array(np.where(cust >= 0, customer_ids[np.maximum(cust, 0)], 0), dtype="Int64"),
            "country": np.where(cust >= 0, country[np.maximum(cust, 0)], "United Kingdom"),
        }
    )
    frame.loc[cust < 0, "customer_id"] = pd.NA
    guest_abroad = (cust < 0) & (rng.random(len(frame)) < 0.04)
    frame.loc[guest_abroad, "country"] = "EIRE"
    frame = frame.sort_values(["invoice_date", "invoice", "stock_code"], kind="stable").reset_index(drop=True)
    return frame[list(COLUMNS)]


def between(frame: pd.DataFrame, start: dt.date, end: dt.date) -> pd.DataFrame:
    """The rows of ``frame`` with ``start <= invoice_date < end`` (dates, midnight to midnight)."""
    ts = frame["invoice_date"]
    return frame[(ts >= pd.Timestamp(start)) & (ts < pd.Timestamp(end))]


if __name__ == "__main__":
    import time

    t = time.perf_counter()
    df = generate()
    hist = between(df, HISTORY_START, HISTORY_END)
    print(f"{len(df):,} rows ({len(hist):,} history) in {time.perf_counter() - t:.1f}s")
    print(df.head(5).to_string())
    print(
        f"invoices {df.invoice.nunique():,}, customers {df.customer_id.nunique():,},"
        f" cancellations {df.invoice.str.startswith('C').mean():.3%} of rows,"
        f" guests {df.customer_id.isna().mean():.1%} of rows, lines/invoice {len(df) / df.invoice.nunique():.1f}"
    )
    print(df.groupby(df.invoice_date.dt.month).size().to_string())
