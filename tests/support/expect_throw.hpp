// CTX_EXPECT_THROW / CTX_ASSERT_THROW: pass only if `statement` throws `Type` (or a subclass)
// whose what() contains `keyword`, like pytest.raises(Type, match=keyword).
#ifndef CTX_TESTS_SUPPORT_EXPECT_THROW_HPP_
#define CTX_TESTS_SUPPORT_EXPECT_THROW_HPP_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#define CTX_EXPECT_THROW(statement, Type, keyword)                                         \
  EXPECT_THAT([&] { statement; },                                                          \
              ::testing::ThrowsMessage<Type>(::testing::HasSubstr(keyword)))
#define CTX_ASSERT_THROW(statement, Type, keyword)                                         \
  ASSERT_THAT([&] { statement; },                                                          \
              ::testing::ThrowsMessage<Type>(::testing::HasSubstr(keyword)))

#endif  // CTX_TESTS_SUPPORT_EXPECT_THROW_HPP_
