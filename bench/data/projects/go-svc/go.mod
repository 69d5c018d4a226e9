module example.com/orders

go 1.22

require (
	github.com/gin-gonic/gin v1.10.0
	github.com/jackc/pgx/v5 v5.6.0
	go.uber.org/zap v1.27.0
)
