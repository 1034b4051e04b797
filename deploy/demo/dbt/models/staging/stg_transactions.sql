-- Invoice lines with their value. Free samples (unit price 0.00) are not sales and are left out.
select
    invoice,
    stock_code,
    description,
    quantity,
    invoice_date,
    unit_price,
    customer_id,
    country,
    quantity * unit_price as line_total,
    invoice like 'C%' as is_cancellation
from {{ source('raw', 'transactions') }}
where unit_price > 0
