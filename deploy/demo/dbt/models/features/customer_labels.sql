-- What each customer of customer_features did after the cutoff: the training labels.
with params as (
    {{ label_cutoff(ref('stg_transactions')) }}
),

future as (
    select
        t.customer_id,
        count(distinct t.invoice) filter (where not t.is_cancellation) as future_orders,
        sum(t.line_total) as future_spend
    from {{ ref('stg_transactions') }} as t
    cross join params as p
    where t.customer_id is not null
      and t.invoice_date >= p.cutoff
    group by t.customer_id
),

outcomes as (
    select
        f.customer_id,
        coalesce(u.future_orders, 0) as future_orders,
        coalesce(u.future_spend, 0) as future_spend
    from {{ ref('customer_features') }} as f
    left join future as u on f.customer_id = u.customer_id
),

threshold as (
    select percentile_cont(0.75) within group (order by future_spend) as p75 from outcomes
)

select
    o.customer_id,
    o.future_orders,
    round(o.future_spend, 2) as future_spend,
    case when o.future_orders = 0 then 1 else 0 end as churned,
    case when o.future_spend >= t.p75 and o.future_spend > 0 then 1 else 0 end as high_value
from outcomes as o
cross join threshold as t
