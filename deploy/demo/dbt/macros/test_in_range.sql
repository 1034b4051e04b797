{#
  Generic test: every non-null value of the column lies in [min_value, max_value] (either bound may be omitted;
  inclusive=false makes both bounds strict). Fails with the rows outside the range. dbt_utils isn't installed
  here, so this stands in for dbt_utils.accepted_range.
#}
{% test in_range(model, column_name, min_value=none, max_value=none, inclusive=true) %}
select {{ column_name }}
from {{ model }}
where {{ column_name }} is not null
  and (
    {% if min_value is not none %}{{ column_name }} {{ '<' if inclusive else '<=' }} {{ min_value }}{% else %}false{% endif %}
    or {% if max_value is not none %}{{ column_name }} {{ '>' if inclusive else '>=' }} {{ max_value }}{% else %}false{% endif %}
  )
{% endtest %}
