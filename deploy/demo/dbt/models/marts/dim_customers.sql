select
    customer_id,
    max(country) as country,
    min(invoice_date) as first_invoice_date,
    max(invoice_date) as last_invoice_date
from {{ ref('stg_transactions') }}
where customer_id is not null
group by customer_id
