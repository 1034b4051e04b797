select
    stock_code,
    max(description) as description,
    round(avg(unit_price), 2) as avg_unit_price
from {{ ref('stg_transactions') }}
group by stock_code
