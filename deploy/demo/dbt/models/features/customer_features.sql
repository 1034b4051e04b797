-- Per-customer features as of the cutoff (invoices before it only): the churn and LTV models' inputs.
with params as (
    {{ label_cutoff(ref('stg_transactions')) }}
),

history as (
    select t.*
    from {{ ref('stg_transactions') }} as t
    cross join params as p
    where t.customer_id is not null
      and t.invoice_date < p.cutoff
)

select
    h.customer_id,
    max(h.country) as country,
    round(sum(h.line_total), 2) as total_spend,
    round(avg(h.unit_price), 4) as avg_unit_price,
    count(distinct h.invoice) filter (where not h.is_cancellation) as order_count,
    max(p.cutoff) - max(h.invoice_date)::date as recency_days,
    round(
        count(distinct h.invoice) filter (where h.is_cancellation)::numeric / count(distinct h.invoice), 4
    ) as cancel_rate,
    round(
        sum(h.quantity) filter (where not h.is_cancellation)::numeric
        / count(distinct h.invoice) filter (where not h.is_cancellation),
        2
    ) as basket_size,
    max(p.cutoff) as feature_cutoff
from history as h
cross join params as p
group by h.customer_id
having count(distinct h.invoice) filter (where not h.is_cancellation) > 0
