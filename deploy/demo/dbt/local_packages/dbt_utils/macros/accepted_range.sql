{#
  accepted_range(model, column_name, min_value, max_value, inclusive): the rows whose column lies outside
  [min_value, max_value] (strictly inside when inclusive is false). Either bound may be left out; NULLs are not
  judged here (pair it with not_null). Same signature as dbt_utils.accepted_range.
#}
{% test accepted_range(model, column_name, min_value=none, max_value=none, inclusive=true) %}
select *
from {{ model }}
where {{ column_name }} is not null
  and not (
    true
    {% if min_value is not none %}and {{ column_name }} {{ '>=' if inclusive else '>' }} {{ min_value }}{% endif %}
    {% if max_value is not none %}and {{ column_name }} {{ '<=' if inclusive else '<' }} {{ max_value }}{% endif %}
  )
{% endtest %}
