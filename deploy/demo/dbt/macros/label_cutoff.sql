{# The feature/label cutoff: the day `label_window_days` before the latest invoice of `relation`. #}
{% macro label_cutoff(relation) %}
    select max(invoice_date)::date - {{ var('label_window_days') }} as cutoff
    from {{ relation }}
{% endmacro %}
