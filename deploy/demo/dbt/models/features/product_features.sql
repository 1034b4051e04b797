-- Per-product features over the whole history.
select
    stock_code,
    count(distinct invoice) filter (where not is_cancellation) as order_count,
    sum(quantity) filter (where not is_cancellation) as units_sold,
    round(sum(line_total), 2) as revenue,
    round(avg(unit_price), 4) as avg_unit_price,
    count(distinct customer_id) as customer_count,
    round(count(*) filter (where is_cancellation)::numeric / count(*), 4) as return_rate
from {{ ref('stg_transactions') }}
group by stock_code
