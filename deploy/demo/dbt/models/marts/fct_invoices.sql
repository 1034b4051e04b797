select
    invoice,
    max(customer_id) as customer_id,
    max(country) as country,
    min(invoice_date) as invoice_date,
    bool_or(is_cancellation) as is_cancellation,
    count(*) as line_count,
    sum(quantity) as units,
    sum(line_total) as invoice_total
from {{ ref('stg_transactions') }}
group by invoice
